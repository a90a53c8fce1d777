/// @file batchnorm_layer.h
/// layer::BatchNormLayer<T>: batch normalization over axis 1 (the features
/// of {N, C} or the channels of {N, C, H, W}).
///
/// Training mode normalizes by the batch's mean and (biased) variance and
/// updates running statistics with `momentum` (new = (1 - m) old + m batch);
/// eval mode uses the running statistics, so one sample gives the same
/// answer alone or in a batch. Learnable gamma (ones) and beta (zeros) have
/// shape {C}. get_state() returns the running mean and variance ({C}, "<name>
/// /running_mean", "/running_var") for checkpoints; they exist from
/// construction (0 and 1), so a checkpoint can be loaded before any forward
/// pass. Requires the input's shape to be known when built.
#pragma once

#include <memory>

#include "magmadnn/compute/regularization.h"
#include "magmadnn/layer/layer.h"

namespace magmadnn::layer {

template <typename T>
class BatchNormLayer : public Layer<T> {
 public:
  BatchNormLayer(op::Expr<T> x, double momentum = 0.1, double eps = 1e-5, std::string name = "");
  /// With given gamma and beta ({C} each).
  BatchNormLayer(op::Expr<T> x, op::Var<T> gamma, op::Var<T> beta, double momentum = 0.1, double eps = 1e-5,
                 std::string name = "");

  std::string type_name() const override { return "BatchNorm"; }
  std::vector<std::pair<std::string, Tensor<T>*>> get_state() override;
  const op::Var<T>& get_gamma() const noexcept { return gamma_; }
  const op::Var<T>& get_beta() const noexcept { return beta_; }
  Tensor<T>& running_mean() { return node_->running_mean(); }
  Tensor<T>& running_var() { return node_->running_var(); }
  /// The epsilon added to the variance (ONNX export writes it).
  double epsilon() const noexcept { return eps_; }

 private:
  void build(double momentum, double eps);

  op::Var<T> gamma_, beta_;
  std::shared_ptr<op::BatchNormNode<T>> node_;
  double eps_ = 1e-5;
};

/// v1: `layer::batchnorm(x)`.
template <typename T>
Ref<BatchNormLayer<T>> batchnorm(const op::Expr<T>& x, double momentum = 0.1, double eps = 1e-5) {
  return make_layer<BatchNormLayer<T>>(x, momentum, eps);
}
template <typename T>
Ref<BatchNormLayer<T>> batchnorm(op::Operation<T>* x, double momentum = 0.1, double eps = 1e-5) {
  return make_layer<BatchNormLayer<T>>(op::Expr<T>(x), momentum, eps);
}

}  // namespace magmadnn::layer
