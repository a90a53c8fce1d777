// docs/hybrid.md: a channel-parallel convolution on {N, 1, 28, 28}
// images (one rank here: every filter on rank 0).
#include <iostream>

#include <magmadnn.h>
#include "magmadnn/comm/communicator_factory.h"
using namespace magmadnn;
// @head@

int main() {
  std::shared_ptr<distributed::Communicator> group = distributed::make_communicator("auto");
  auto x = op::var<float>("x", {2, 1, 28, 28}, {UNIFORM, {-1.0f, 1.0f}}, HOST);
// @snippet@
  const Tensor<float>* y = a1->out()->eval();
  std::cout << "output " << y->shape() << "\n";
  return y->shape() == Shape{2, 6, 28, 28} ? 0 : 1;
}
