// docs/hybrid.md: layers split over a group, built on a {N, 784} input
// (one rank here: the split layers hold the whole matrices).
#include <iostream>

#include <magmadnn.h>
#include "magmadnn/comm/communicator_factory.h"
using namespace magmadnn;
// @head@

int main() {
  auto x = op::var<float>("x", {8, 784}, {UNIFORM, {-1.0f, 1.0f}}, HOST);
// @snippet@
  const Tensor<float>* y = fc3->out()->eval();
  std::cout << "output " << y->shape() << "\n";
  return y->shape() == Shape{8, 10} ? 0 : 1;
}
