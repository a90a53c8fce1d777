// docs/custom_layer.md: the layer of the header block, used in a network
// that is then built and run on one batch.
#include <iostream>

#include "@custom_layer_header@"
using namespace magmadnn;
// @head@

int main() {
// @snippet@
  model::NeuralNetwork<float> net(layers, optimizer::CROSS_ENTROPY, optimizer::SGD, {32, 1, 0.1});
  Tensor<float> x({32, 6}, {UNIFORM, {-1.0f, 1.0f}}, HOST);
  const Tensor<float> p = net.predict(x);
  std::cout << "predictions " << p.shape() << "\n";
  return p.shape() == Shape{32, 5} ? 0 : 1;
}
