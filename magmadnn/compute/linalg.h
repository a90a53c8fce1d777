/// @file linalg.h
/// Matrix operations on graph nodes: matmul (with transposes), linear
/// (X W^T + b, the fully connected layer with one bias per output unit) and
/// transpose.
#pragma once

#include "magmadnn/compute/arithmetic.h"

namespace magmadnn::op {

/// Swaps the last two axes.
template <typename T>
class TransposeNode : public Operation<T> {
 public:
  explicit TransposeNode(OpPtr<T> x);
  std::string kind() const override { return "transpose"; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;
};

/// op(a) * op(b) for 2-D a and b; op transposes when trans_a / trans_b.
template <OpLike A, OpLike B>
  requires SameOpType<A, B>
Expr<op_value_t<A>> matmul(const A& a, const B& b, bool trans_a = false, bool trans_b = false) {
  using T = op_value_t<A>;
  return make_expr<T>(std::make_shared<MatmulNode<T>>(to_node(a), to_node(b), trans_a, trans_b));
}

/// x W^T + b with x {batch, in}, W {out, in}, b {out}: one bias per output
/// unit, broadcast over the batch. Computed in one pass (math::linear).
template <OpLike X, OpLike W, OpLike B>
  requires SameOpType<X, W, B>
Expr<op_value_t<X>> linear(const X& x, const W& w, const B& b) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<LinearNode<T>>(to_node(x), to_node(w), to_node(b)));
}
/// x W^T (no bias).
template <OpLike X, OpLike W>
  requires SameOpType<X, W>
Expr<op_value_t<X>> linear(const X& x, const W& w) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<LinearNode<T>>(to_node(x), to_node(w), nullptr));
}

/// The transpose of a matrix (last two axes of a batch of matrices).
template <OpLike X>
Expr<op_value_t<X>> transpose(const X& x) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<TransposeNode<T>>(to_node(x)));
}

}  // namespace magmadnn::op
