// The paper's Model form (README): the names the block uses, on 40 random
// samples of 4 features in 2 classes, so that fitting takes milliseconds.
#include <iostream>

#include <magmadnn.h>
using namespace magmadnn;
// @head@

int main() {
  const unsigned int batch_size = 10;
  const int n_epochs = 2;
  const double learning_rate = 0.1;
  const bool verbose = true;
  Tensor<float> x_train({40, 4}, {UNIFORM, {0.0f, 1.0f}}, HOST);
  Tensor<float> y_train({40, 2}, {ZERO, {}}, HOST);
  for (int i = 0; i < 40; ++i) y_train.set({i, i % 2}, 1.0f);
  auto x_batch = op::var<float>("x_batch", {batch_size, 4}, {NONE}, HOST);
  auto input = layer::input(x_batch);
  auto fc = layer::fullyconnected(input->out(), 2);
  auto act = layer::activation(fc->out(), layer::SOFTMAX);
  auto output = layer::output(act->out());
  std::vector<layer::Layer<float>*> layers = {input, fc, act, output};
  model::metric_t out;
// @snippet@
  std::cout << "epochs " << out.epochs << ", loss " << out.loss << "\n";
  return out.epochs == static_cast<unsigned>(n_epochs) ? 0 : 1;
}
