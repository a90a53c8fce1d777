// docs/distributed.md: a strategy attached to a network by hand. One
// process (the local communicator), a 4 -> 2 network, 40 random samples.
#include <iostream>

#include <magmadnn.h>
#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/parallel/strategy.h"
using namespace magmadnn;
// @head@

int main() {
  auto x_batch = op::var<float>("x_batch", {10, 4}, {NONE}, HOST);
  auto input = layer::input(x_batch);
  auto fc = layer::fullyconnected(input->out(), 2);
  auto act = layer::activation(fc->out(), layer::SOFTMAX);
  auto output = layer::output(act->out());
  model::NeuralNetwork<float> net({input, fc, act, output}, optimizer::CROSS_ENTROPY, optimizer::SGD, {10, 2, 0.1});
  Tensor<float> x_mine({40, 4}, {UNIFORM, {0.0f, 1.0f}}, HOST);
  Tensor<float> y_mine({40, 2}, {ZERO, {}}, HOST);
  for (int i = 0; i < 40; ++i) y_mine.set({i, i % 2}, 1.0f);
  model::FitOptions<float> opts;
// @snippet@
  std::cout << "steps " << s->timing().steps << "\n";
  return s->timing().steps == 8 ? 0 : 1;  // 2 epochs of 4 batches
}
