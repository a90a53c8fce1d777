/// @file reduce.h
/// Reductions on graph nodes: sum and mean along one axis (negative axes
/// count from the end) or over all elements (result shape {1}), and the
/// arg max along an axis. The gradient
/// broadcasts the incoming gradient back over the reduced axis.
#pragma once

#include <optional>

#include "magmadnn/compute/arithmetic.h"

namespace magmadnn::op {

template <typename T>
class ReduceNode : public Operation<T> {
 public:
  /// axis: std::nullopt reduces every element into shape {1}.
  ReduceNode(OpPtr<T> x, ReduceOp op, std::optional<std::int64_t> axis, bool keepdims);
  std::string kind() const override { return op_ == ReduceOp::Mean ? "mean" : "reduce_sum"; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  Shape keepdims_shape(const Shape& x) const;
  ReduceOp op_;
  std::optional<std::int64_t> axis_;
  bool keepdims_;
};

/// The index of the maximum along `axis` (the first on ties), as a value of
/// T, the axis removed unless keepdims. Piecewise constant in x: its
/// gradient is zero (away from ties, where it jumps).
template <typename T>
class ArgMaxNode : public Operation<T> {
 public:
  ArgMaxNode(OpPtr<T> x, std::int64_t axis, bool keepdims);
  std::string kind() const override { return "argmax"; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  std::int64_t axis_;
  bool keepdims_;
};

/// The index of the maximum of x along `axis` (first on ties), as T.
template <OpLike X>
Expr<op_value_t<X>> argmax(const X& x, std::int64_t axis, bool keepdims = false) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<ArgMaxNode<T>>(to_node(x), axis, keepdims));
}

/// Sum of all elements, shape {1}.
template <OpLike X>
Expr<op_value_t<X>> reduce_sum(const X& x) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<ReduceNode<T>>(to_node(x), ReduceOp::Sum, std::nullopt, false));
}
/// Sum along `axis`; the axis is removed unless keepdims.
template <OpLike X>
Expr<op_value_t<X>> reduce_sum(const X& x, std::int64_t axis, bool keepdims = false) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<ReduceNode<T>>(to_node(x), ReduceOp::Sum, axis, keepdims));
}
/// v1 spelling of reduce_sum(x, axis).
template <OpLike X>
Expr<op_value_t<X>> reducesum(const X& x, std::int64_t axis) {
  return reduce_sum(x, axis);
}
/// Mean of all elements, shape {1}.
template <OpLike X>
Expr<op_value_t<X>> mean(const X& x) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<ReduceNode<T>>(to_node(x), ReduceOp::Mean, std::nullopt, false));
}
/// Mean along `axis`.
template <OpLike X>
Expr<op_value_t<X>> mean(const X& x, std::int64_t axis, bool keepdims = false) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<ReduceNode<T>>(to_node(x), ReduceOp::Mean, axis, keepdims));
}

}  // namespace magmadnn::op
