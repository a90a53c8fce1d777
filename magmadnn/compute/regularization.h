/// @file regularization.h
/// Ops whose behaviour depends on train / eval mode (op::set_training):
///  - dropout(x, keep_prob): in training, y = x * mask / keep_prob with a
///    Bernoulli(keep_prob) mask drawn from the seeded Philox streams (a new
///    mask each time the node recomputes); in eval, y = x;
///  - batchnorm(x, gamma, beta): normalizes each feature (axis 1 of {N, C} or
///    {N, C, ...}) by the batch mean and biased variance in training, and by
///    running statistics in eval; running_mean/var are updated in training
///    with `momentum` (PyTorch convention: new = (1-m) old + m batch, the
///    running variance using the unbiased batch variance).
/// Nodes start in training mode.
#pragma once

#include "magmadnn/compute/arithmetic.h"
#include "magmadnn/compute/blocked_output.h"

namespace magmadnn::op {

template <typename T>
class DropoutNode : public Operation<T> {
 public:
  DropoutNode(OpPtr<T> x, T keep_prob);
  std::string kind() const override { return "dropout"; }
  void set_training(bool training) override;
  bool training() const noexcept { return training_; }
  /// The last mask (scaled by 1 / keep_prob); empty in eval mode.
  const Tensor<T>& mask() const noexcept { return mask_; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override { return in[0]; }
  void forward() override;

 private:
  T keep_;
  bool training_ = true;
  Tensor<T> mask_;
};

/// Batch normalisation, optionally followed by a residual add and a ReLU
/// (a residual block's tail): y = f(batchnorm(x) + skip), in one pass each
/// way through math::batchnorm_forward / batchnorm_backward. op::batchnorm
/// builds the plain node; op::fuse_batchnorm_activation (passes.h) makes the
/// fused ones with fused(). Inputs: x, gamma, beta[, skip].
/// Reads x and skip in any layout and may produce oneDNN's blocked one
/// (BlockedOutput, blocked_output.h); it computes in its output's layout.
template <typename T>
class BatchNormNode : public Operation<T>, public BlockedOutput<T> {
 public:
  /// The running mean and variance, shared by a node and those fused() from it.
  struct RunningStats {
    Tensor<T> mean, var;
  };

  BatchNormNode(OpPtr<T> x, OpPtr<T> gamma, OpPtr<T> beta, T momentum, T eps);
  /// base's normalisation (same x, gamma, beta, momentum, eps, mode, and
  /// residual input if it has one) with `skip` (null: none) added after it
  /// and a ReLU last when `relu`; base must not have the part added. The
  /// new node shares base's running statistics: both read and update the
  /// same two tensors, so a layer's checkpointed state stays the graph's.
  static std::shared_ptr<BatchNormNode> fused(const BatchNormNode& base, OpPtr<T> skip, bool relu);
  /// For fused() (through std::make_shared: nodes are never made by `new`,
  /// see operation.h); Key keeps it out of other callers' reach.
  class Key {
    friend class BatchNormNode;
    Key() = default;
  };
  BatchNormNode(Key, std::vector<OpPtr<T>> inputs, T momentum, T eps, bool relu,
                std::shared_ptr<RunningStats> stats);
  /// "batchnorm", with "_add" and "_relu" for the fused parts.
  std::string kind() const override;
  void set_training(bool training) override;
  bool training() const noexcept { return training_; }
  bool fused_relu() const noexcept { return relu_; }
  bool has_skip() const noexcept { return this->inputs_.size() > 3; }
  Tensor<T>& running_mean() { return stats_->mean; }
  Tensor<T>& running_var() { return stats_->var; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  T momentum_, eps_;
  bool relu_ = false;
  bool training_ = true;
  std::shared_ptr<RunningStats> stats_;
  Tensor<T> mean_, var_, invstd_;  // of the last forward pass, {C}, for backward
  Tensor<T> x_in_, skip_in_;       // x and skip in the output's layout, when they came in another
};

template <OpLike X, typename S>
  requires std::is_arithmetic_v<S>
Expr<op_value_t<X>> dropout(const X& x, S keep_prob) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<DropoutNode<T>>(to_node(x), static_cast<T>(keep_prob)));
}

/// gamma and beta have shape {C} (one per feature): learnable scale and shift.
template <OpLike X, OpLike G, OpLike B>
  requires SameOpType<X, G, B>
Expr<op_value_t<X>> batchnorm(const X& x, const G& gamma, const B& beta, double momentum = 0.1, double eps = 1e-5) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<BatchNormNode<T>>(to_node(x), to_node(gamma), to_node(beta),
                                                         static_cast<T>(momentum), static_cast<T>(eps)));
}

}  // namespace magmadnn::op
