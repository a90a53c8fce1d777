/// @file shape_ops.h
/// Layout operations on graph nodes: reshape (one size may be -1), flatten
/// ({N, ...} -> {N, rest}), concat along an axis, slice of one axis and
/// permute (any order of the axes). Their gradients move the
/// incoming gradient back into the input's layout.
#pragma once

#include <vector>

#include "magmadnn/compute/arithmetic.h"

namespace magmadnn::op {

/// Same elements, another shape. `pattern` may hold one -1 (inferred), and
/// `keep_batch` keeps axis 0 of the input (flatten: pattern {-1}).
template <typename T>
class ReshapeNode : public Operation<T> {
 public:
  ReshapeNode(OpPtr<T> x, std::vector<std::int64_t> pattern, bool keep_batch);
  std::string kind() const override { return keep_batch_ ? "flatten" : "reshape"; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  std::vector<std::int64_t> pattern_;
  bool keep_batch_;
};

/// Inputs joined along `axis`; all other sizes must agree.
template <typename T>
class ConcatNode : public Operation<T> {
 public:
  ConcatNode(std::vector<OpPtr<T>> xs, std::int64_t axis);
  std::string kind() const override { return "concat"; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  std::int64_t axis_;
};

/// x with its axes reordered: output axis i is x's axis perm[i] (perm
/// holds each of 0 .. ndim - 1 once, else ValueError naming it). The
/// gradient is g permuted back by the inverse order.
template <typename T>
class PermuteNode : public Operation<T> {
 public:
  PermuteNode(OpPtr<T> x, std::vector<int> perm);
  std::string kind() const override { return "permute"; }
  const std::vector<int>& perm() const noexcept { return perm_; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  std::vector<int> perm_;
};

/// x[..., begin:end, ...] along `axis` (0 <= begin <= end <= its size,
/// else ShapeError naming them). The gradient is g in those positions and
/// zero elsewhere.
template <typename T>
class SliceNode : public Operation<T> {
 public:
  SliceNode(OpPtr<T> x, std::int64_t axis, std::int64_t begin, std::int64_t end);
  std::string kind() const override { return "slice"; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  std::int64_t axis_, begin_, end_;
};

/// x[..., begin:end, ...] along `axis` (a copy).
template <OpLike X>
Expr<op_value_t<X>> slice(const X& x, std::int64_t axis, std::int64_t begin, std::int64_t end) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<SliceNode<T>>(to_node(x), axis, begin, end));
}

/// x with its axes in the order `perm` (NumPy's transpose(x, perm)).
template <OpLike X>
Expr<op_value_t<X>> permute(const X& x, std::vector<int> perm) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<PermuteNode<T>>(to_node(x), std::move(perm)));
}

/// x with shape `shape` (one entry may be -1). The output shares x's storage.
template <OpLike X>
Expr<op_value_t<X>> reshape(const X& x, std::vector<std::int64_t> shape) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<ReshapeNode<T>>(to_node(x), std::move(shape), false));
}
/// {N, d1, d2, ...} -> {N, d1 * d2 * ...}.
template <OpLike X>
Expr<op_value_t<X>> flatten(const X& x) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<ReshapeNode<T>>(to_node(x), std::vector<std::int64_t>{-1}, true));
}
/// Joins the inputs along `axis`.
template <OpLike X>
Expr<op_value_t<X>> concat(const std::vector<X>& xs, std::int64_t axis = 0) {
  using T = op_value_t<X>;
  std::vector<OpPtr<T>> nodes;
  for (const auto& x : xs) nodes.push_back(to_node(x));
  return make_expr<T>(std::make_shared<ConcatNode<T>>(std::move(nodes), axis));
}
template <OpLike A, OpLike B>
  requires SameOpType<A, B>
Expr<op_value_t<A>> concat(const A& a, const B& b, std::int64_t axis = 0) {
  using T = op_value_t<A>;
  return concat(std::vector<Expr<T>>{Expr<T>(to_node(a)), Expr<T>(to_node(b))}, axis);
}

}  // namespace magmadnn::op
