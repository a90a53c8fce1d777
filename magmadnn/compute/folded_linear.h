/// @file folded_linear.h
/// The fully connected product with the bias folded into the weight matrix
/// (SHM-Learn-Dist §4, "Memory Realignment"): one GEMM computes
///   out = act([1, x] * Wb^T),  Wb = [b | W]  {out, in + 1},
/// where [1, x] is x {batch, in} after the seed's ShiftRight (a column of
/// ones before its columns). Backward is two GEMMs, with no bias reduction:
/// dWb = dz^T [1, x] (its first column is db), and dx = dz ShiftLeft(Wb),
/// the seed's ShiftLeft of the weights done by reading Wb in place without
/// its bias column (math::matmul_drop_first_col), not by a copy.
///
/// Requires x {batch, in} and Wb {out, in + 1}; act as LinearNode::supports()
/// (the fusion pass folds a following sigmoid / relu / tanh in, as for
/// LinearNode). Guarantees the values of op::linear(x, W, b) up to the
/// order of the sums (b is added inside the product rather than after it).
/// The node keeps [1, x] from its forward pass for the weight gradient (one
/// {batch, in + 1} buffer). Under autocast it computes in the element type
/// (no low-precision GEMM). On a GPU the realignment runs the backends'
/// generic per-row copies (Kernels::shift_right); not run on a GPU yet.
#pragma once

#include "magmadnn/compute/arithmetic.h"

namespace magmadnn::op {

template <typename T>
class FoldedLinearNode : public Operation<T> {
 public:
  FoldedLinearNode(OpPtr<T> x, OpPtr<T> wb, UnaryOp act = UnaryOp::Identity);
  std::string kind() const override;
  UnaryOp activation() const noexcept { return act_; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;
  /// As LinearNode's: a large Wb's update goes into the GEMM that makes its
  /// gradient, after dx has read the old Wb.
  void backward_into(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin,
                     const std::vector<const typename Operation<T>::UpdateTarget*>& targets,
                     std::vector<bool>& applied) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  UnaryOp act_;
  Tensor<T> shifted_;  // [1, x] of the last forward pass
};

/// act-free folded product: x {batch, in}, wb {out, in + 1} = [b | W].
template <OpLike X, OpLike WB>
  requires SameOpType<X, WB>
Expr<op_value_t<X>> folded_linear(const X& x, const WB& wb) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<FoldedLinearNode<T>>(to_node(x), to_node(wb)));
}

}  // namespace magmadnn::op
