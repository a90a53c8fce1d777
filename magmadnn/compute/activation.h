/// @file activation.h
/// Activation functions on graph nodes: sigmoid, relu, tanh, leaky_relu, gelu,
/// softplus (elementwise) and
/// softmax / log_softmax over the last axis (numerically stable: the row
/// maximum is subtracted). Gradients are exact.
#pragma once

#include "magmadnn/compute/arithmetic.h"

namespace magmadnn::op {

/// Softmax (or log-softmax) over the last axis.
template <typename T>
class SoftmaxNode : public Operation<T> {
 public:
  SoftmaxNode(OpPtr<T> x, bool log);
  std::string kind() const override { return log_ ? "log_softmax" : "softmax"; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  bool log_;
};

/// 1 / (1 + e^-x). v1's extra flags (copy, fast) are accepted and ignored.
template <OpLike X>
Expr<op_value_t<X>> sigmoid(const X& x, bool /*copy*/ = true, bool /*fast*/ = true) {
  return detail::unary(UnaryOp::Sigmoid, op_value_t<X>(0), x);
}
/// max(x, 0).
template <OpLike X>
Expr<op_value_t<X>> relu(const X& x, bool /*copy*/ = true) {
  return detail::unary(UnaryOp::Relu, op_value_t<X>(0), x);
}
/// Hyperbolic tangent.
template <OpLike X>
Expr<op_value_t<X>> tanh(const X& x, bool /*copy*/ = true) {
  return detail::unary(UnaryOp::Tanh, op_value_t<X>(0), x);
}
/// x for x > 0, slope * x otherwise.
template <OpLike X>
Expr<op_value_t<X>> leaky_relu(const X& x, double slope = 0.01) {
  return detail::unary(UnaryOp::LeakyRelu, op_value_t<X>(slope), x);
}
/// Gaussian error linear unit, x * Phi(x) (the exact erf form).
template <OpLike X>
Expr<op_value_t<X>> gelu(const X& x) {
  return detail::unary(UnaryOp::Gelu, op_value_t<X>(0), x);
}
/// log(1 + e^x), a smooth relu, computed without overflow; its derivative
/// is sigmoid(x).
template <OpLike X>
Expr<op_value_t<X>> softplus(const X& x) {
  return detail::unary(UnaryOp::Softplus, op_value_t<X>(0), x);
}
/// Softmax over the last axis.
template <OpLike X>
Expr<op_value_t<X>> softmax(const X& x) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<SoftmaxNode<T>>(to_node(x), false));
}
/// log(softmax(x)) over the last axis, computed stably.
template <OpLike X>
Expr<op_value_t<X>> log_softmax(const X& x) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<SoftmaxNode<T>>(to_node(x), true));
}

}  // namespace magmadnn::op
