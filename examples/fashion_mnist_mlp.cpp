// The README's training example: the MagmaDNN paper's MLP on Fashion-MNIST
// (Debian's dataset-fashion-mnist package) with the modern API, then its
// test accuracy.
#include <iostream>

#include <magmadnn.h>

using namespace magmadnn;

int main() {
  auto train = data::load_fashion_mnist(data::Train);  // /usr/share/datasets/fashion-mnist
  auto test = data::load_fashion_mnist(data::Test);

  auto in = layer::input<float>({-1, 1, 28, 28});
  auto flat = layer::flatten(in->out());
  auto fc = layer::fullyconnected(flat->out(), 528);
  auto act = layer::activation(fc->out(), layer::SIGMOID);
  auto out = layer::fullyconnected(act->out(), 10);
  model::NeuralNetwork<float> net({in, flat, fc, act, out}, optimizer::CROSS_ENTROPY, optimizer::SGD,
                                  {100, 5, 0.05});  // batch size, epochs, learning rate
  model::metric_t m;
  net.fit(train.images, train.labels, m, /*verbose=*/true);

  const model::Evaluation e = net.evaluate(test.images, test.labels);
  std::cout << "test accuracy " << e.accuracy << " (loss " << e.loss << ")\n";
  return 0;
}
