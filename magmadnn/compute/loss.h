/// @file loss.h
/// Loss functions, each returning shape {1}:
///  - crossentropy(y_true, y_pred) = -(1/N) sum_ij y_true_ij log(y_pred_ij), with N
///    the batch size (axis 0), as in MagmaDNN v1 (y_pred are probabilities);
///  - softmax_crossentropy(logits, y_true): the same loss on softmax(logits),
///    fused and numerically stable (log-sum-exp), gradient (softmax - y) / N;
///  - mse(pred, target) = mean over all elements of (pred - target)^2.
#pragma once

#include "magmadnn/compute/arithmetic.h"

namespace magmadnn::op {

template <typename T>
class LossNode : public Operation<T> {
 public:
  enum class Kind { CrossEntropy, SoftmaxCrossEntropy, MSE };
  LossNode(Kind kind, OpPtr<T> a, OpPtr<T> b);
  std::string kind() const override;
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  Kind kind_;
  Tensor<T> saved_;  // log-softmax (fused), or pred - target (mse)
};

/// v1 argument order: the labels first, then the predicted probabilities.
template <OpLike Y, OpLike P>
  requires SameOpType<Y, P>
Expr<op_value_t<Y>> crossentropy(const Y& y_true, const P& y_pred) {
  using T = op_value_t<Y>;
  return make_expr<T>(
      std::make_shared<LossNode<T>>(LossNode<T>::Kind::CrossEntropy, to_node(y_true), to_node(y_pred)));
}
/// Fused, stable softmax + cross-entropy on {N, C} logits and {N, C} targets.
template <OpLike L, OpLike Y>
  requires SameOpType<L, Y>
Expr<op_value_t<L>> softmax_crossentropy(const L& logits, const Y& y_true) {
  using T = op_value_t<L>;
  return make_expr<T>(
      std::make_shared<LossNode<T>>(LossNode<T>::Kind::SoftmaxCrossEntropy, to_node(logits), to_node(y_true)));
}
/// Mean squared error.
template <OpLike P, OpLike Y>
  requires SameOpType<P, Y>
Expr<op_value_t<P>> mse(const P& pred, const Y& target) {
  using T = op_value_t<P>;
  return make_expr<T>(std::make_shared<LossNode<T>>(LossNode<T>::Kind::MSE, to_node(pred), to_node(target)));
}

}  // namespace magmadnn::op
