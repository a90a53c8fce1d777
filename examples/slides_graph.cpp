// The compute-graph and optimizer code of the MagmaDNN slides, as written
// there: an affine transform evaluated through the graph, then gradient
// descent on x^2 + c.
#include <cmath>
#include <iostream>

#include "magmadnn.h"

using namespace magmadnn;

int main() {
  auto X = op::var<float>("X", {5, 3}, {UNIFORM});
  auto W = op::var<float>("W", {6, 5}, {UNIFORM});
  auto b = op::var<float>("b", {6, 3}, {UNIFORM});
  auto transform = op::add(op::matmul(W, X), b);
  Tensor<float> *output = transform->eval();
  std::cout << "W X + b =\n" << *output << "\n";

  auto x = op::var<float>("x", NONE);
  auto c = op::var<float>("c", {CONSTANT, -2.0f});
  x->value().set(0, 3.0f);
  optimizer::GradientDescent opt(0.05);
  int steps = 0;
  while (std::fabs(x->eval()->get(0)) >= 1e-3f && steps < 1000) {
    opt.minimize(op::add(op::pow(x, 2), c), {x});
    ++steps;
  }
  std::cout << "minimize x^2 + c from x = 3: x = " << x->eval()->get(0) << " after " << steps << " steps\n";
  return 0;
}
