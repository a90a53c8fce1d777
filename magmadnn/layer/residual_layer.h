/// @file residual_layer.h
/// layer::ResidualLayer<T>: the basic block of a residual network (He et
/// al., 2016): out = relu(BN(conv3x3(relu(BN(conv3x3_s(x))))) + shortcut(x)),
/// the first convolution with stride s, the shortcut x itself when the
/// block keeps the shape, else BN(conv1x1_s(x)) (the projection shortcut).
///
/// One layer to the model, several inside: its convolutions and batch
/// normalisations are layers of their own, held by this one, whose
/// parameters it registers under "conv1/W", "bn1/gamma", ... (so
/// named_weights() gives "<name>/conv1/W") and whose running statistics
/// get_state() returns as "<name>/bn1/running_mean", ... Train/eval mode
/// reaches the inner batch normalisations through the graph (Layer's
/// default set_training). The convolutions have no bias (the batch
/// normalisation after each has one) and He initialisation.
///
/// Requires a 4-D input {N, C, H, W} with C known when built, filters >= 1
/// and strides >= 1 (ValueError otherwise). Guarantees an output of
/// {N, filters, ceil(H / sh), ceil(W / sw)}.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "magmadnn/layer/batchnorm_layer.h"
#include "magmadnn/layer/conv2d_layer.h"
#include "magmadnn/layer/dims2.h"
#include "magmadnn/layer/layer.h"

namespace magmadnn::layer {

template <typename T>
class ResidualLayer : public Layer<T> {
 public:
  ResidualLayer(op::Expr<T> x, std::int64_t filters, Dims2 stride = {1, 1}, std::string name = "");

  std::string type_name() const override { return "Residual"; }
  std::vector<std::pair<std::string, Tensor<T>*>> get_state() override;
  /// Whether the shortcut is a projection (the block changes the shape).
  bool projects() const noexcept { return bn3_ != nullptr; }
  /// The inner layers in the order they were built (conv1, bn1, conv2, bn2,
  /// then conv3, bn3 when it projects), for code that walks a network's
  /// layers (ONNX export); the ReLUs and the sum join them in the graph.
  const std::vector<std::shared_ptr<Layer<T>>>& parts() const noexcept { return parts_; }

 private:
  Ref<Conv2dLayer<T>> conv(const op::Expr<T>& in, const std::string& key, std::int64_t k, std::int64_t filters,
                           Dims2 stride);
  Ref<BatchNormLayer<T>> norm(const op::Expr<T>& in, const std::string& key);

  std::shared_ptr<BatchNormLayer<T>> bn1_, bn2_, bn3_;
  std::vector<std::shared_ptr<Layer<T>>> parts_;  // keeps the inner layers alive
};

/// `layer::residual(x, 32, {2, 2})`.
template <typename T>
Ref<ResidualLayer<T>> residual(const op::Expr<T>& x, std::int64_t filters, Dims2 stride = {1, 1}) {
  return make_layer<ResidualLayer<T>>(x, filters, stride);
}

}  // namespace magmadnn::layer
