#include "magmadnn/layer/activation_layer.h"

#include "magmadnn/compute/activation.h"

namespace magmadnn::layer {

const char* activation_name(activation_t a) noexcept {
  switch (a) {
    case SIGMOID: return "sigmoid";
    case TANH: return "tanh";
    case RELU: return "relu";
    case SOFTMAX: return "softmax";
    case LEAKY_RELU: return "leaky_relu";
    case GELU: return "gelu";
  }
  return "unknown";
}

template <typename T>
op::Expr<T> apply_activation(const op::Expr<T>& x, activation_t a, double alpha) {
  switch (a) {
    case SIGMOID: return op::sigmoid(x);
    case TANH: return op::tanh(x);
    case RELU: return op::relu(x);
    case SOFTMAX: return op::softmax(x);
    case LEAKY_RELU: return op::leaky_relu(x, alpha);
    case GELU: return op::gelu(x);
  }
  MAGMADNN_THROW(ValueError, "layer::activation: unknown activation_t value " << static_cast<int>(a));
}

template <typename T>
ActivationLayer<T>::ActivationLayer(op::Expr<T> x, activation_t func, double alpha, std::string name)
    : Layer<T>(std::move(name), std::move(x), "activation"), func_(func), alpha_(alpha) {
  MAGMADNN_CHECK(this->input_, ValueError, "layer::activation: empty input handle");
  this->set_output(apply_activation(this->input_, func_, alpha_));
}

#define MAGMADNN_INSTANTIATE_ACTIVATION(T)                                                    \
  template op::Expr<T> apply_activation(const op::Expr<T>&, activation_t, double); \
  template class ActivationLayer<T>;
MAGMADNN_INSTANTIATE_ACTIVATION(float)
MAGMADNN_INSTANTIATE_ACTIVATION(double)

}  // namespace magmadnn::layer
