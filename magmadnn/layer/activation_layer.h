/// @file activation_layer.h
/// layer::ActivationLayer<T>: an elementwise (or softmax) nonlinearity.
///
/// activation_t keeps MagmaDNN v1's names and values (SIGMOID, TANH, RELU,
/// SOFTMAX) and adds LEAKY_RELU (slope `alpha` for x < 0, default 0.01) and
/// GELU (exact, erf based). SOFTMAX normalises over the last axis.
#pragma once

#include "magmadnn/layer/layer.h"
#include "magmadnn/tensor/filler.h"

namespace magmadnn::layer {

enum activation_t { SIGMOID, TANH, RELU, SOFTMAX, LEAKY_RELU, GELU };

/// "sigmoid", "tanh", "relu", "softmax", "leaky_relu", "gelu".
const char* activation_name(activation_t a) noexcept;

/// The weight initializer suited to a layer followed by `a`: He (normal,
/// variance 2 / fan_in) for the rectifier family (RELU, LEAKY_RELU, GELU),
/// Glorot uniform otherwise.
template <typename T>
tensor_filler_t<T> init_for(activation_t a) {
  return (a == RELU || a == LEAKY_RELU || a == GELU) ? tensor_filler_t<T>(HE) : tensor_filler_t<T>(GLOROT);
}

/// The activation applied to a graph node (what the layer builds; also for
/// code that wants the function without a layer).
template <typename T>
op::Expr<T> apply_activation(const op::Expr<T>& x, activation_t a, double alpha = 0.01);

template <typename T>
class ActivationLayer : public Layer<T> {
 public:
  ActivationLayer(op::Expr<T> x, activation_t func, double alpha = 0.01, std::string name = "");
  std::string type_name() const override { return "Activation"; }
  activation_t function() const noexcept { return func_; }
  double alpha() const noexcept { return alpha_; }

 private:
  activation_t func_;
  double alpha_;
};

/// v1: `layer::activation(fc->out(), layer::RELU)`.
template <typename T>
Ref<ActivationLayer<T>> activation(const op::Expr<T>& x, activation_t func, double alpha = 0.01) {
  return make_layer<ActivationLayer<T>>(x, func, alpha);
}
template <typename T>
Ref<ActivationLayer<T>> activation(op::Operation<T>* x, activation_t func, double alpha = 0.01) {
  return make_layer<ActivationLayer<T>>(op::Expr<T>(x), func, alpha);
}

}  // namespace magmadnn::layer
