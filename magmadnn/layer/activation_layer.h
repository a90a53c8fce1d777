/// @file activation_layer.h
/// layer::ActivationLayer<T>: an elementwise (or softmax) nonlinearity.
///
/// activation_t keeps MagmaDNN v1's names and values (SIGMOID, TANH, RELU,
/// SOFTMAX) and adds LEAKY_RELU (slope `alpha` for x < 0, default 0.01),
/// GELU (exact, erf based) and SOFTPLUS (log(1 + e^x)). SOFTMAX normalises
/// over the last axis. Every
/// other activation is an op of the op table (backend/unary_op_table.h),
/// which gives its name, derivative and fusion; all_activations() lists them
/// all, so tests and the command line follow the table.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "magmadnn/backend/kernels.h"
#include "magmadnn/layer/layer.h"
#include "magmadnn/tensor/filler.h"

namespace magmadnn::layer {

enum activation_t { SIGMOID, TANH, RELU, SOFTMAX, LEAKY_RELU, GELU, SOFTPLUS };

/// Every activation_t, in value order.
std::span<const activation_t> all_activations() noexcept;

/// The elementwise op that `a` applies; none for SOFTMAX (the one activation
/// that is not elementwise) and for a value outside the enum.
std::optional<UnaryOp> activation_op(activation_t a) noexcept;

/// "softmax", or the op-table name of activation_op(a) ("sigmoid", "tanh",
/// "relu", "leaky_relu", "gelu", ...); "unknown" outside the enum.
const char* activation_name(activation_t a) noexcept;

/// The activation called `name` (as activation_name gives it). Throws
/// ValueError naming `name` and listing every activation's name.
activation_t activation_from_name(std::string_view name);

/// Whether `a` is of the rectifier family (RELU, LEAKY_RELU, GELU,
/// SOFTPLUS), whose layers init_for() initialises with He, not Glorot.
bool is_rectifier(activation_t a) noexcept;

/// The weight initializer suited to a layer followed by `a`: He (normal,
/// variance 2 / fan_in) for the rectifier family, Glorot uniform otherwise.
template <typename T>
tensor_filler_t<T> init_for(activation_t a) {
  return is_rectifier(a) ? tensor_filler_t<T>(HE) : tensor_filler_t<T>(GLOROT);
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
