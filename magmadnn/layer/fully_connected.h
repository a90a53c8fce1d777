/// @file fully_connected.h
/// layer::FullyConnectedLayer<T>: y = x W^T + b (paper §2.3, "dense").
///
/// Requires an input of shape {N, f1, f2, ...} whose sample shape is known
/// when the layer is built; more than two axes are flattened to
/// {N, f1 * f2 * ...} first. Guarantees W of shape {units, in_features} and,
/// with a bias, b of shape {units}: one bias per output unit, shared by every
/// row of the batch (MagmaDNN v1 had one per batch row, so its graph was
/// tied to one batch size; this one is not).
///
/// Initialization: W from `weight_init` (default Glorot uniform; pass
/// layer::RELU or HE for He normal), b zero. Random fills come from the
/// global seed (set_seed), so a network is reproducible.
#pragma once

#include <cstdint>

#include "magmadnn/layer/activation_layer.h"
#include "magmadnn/layer/layer.h"

namespace magmadnn::layer {

template <typename T>
class FullyConnectedLayer : public Layer<T> {
 public:
  FullyConnectedLayer(op::Expr<T> x, std::int64_t units, bool use_bias = true,
                      const tensor_filler_t<T>& weight_init = {GLOROT}, std::string name = "");
  /// With given parameters (shared or pre-trained weights): w {units, in},
  /// b {units} or an empty handle for no bias.
  FullyConnectedLayer(op::Expr<T> x, op::Var<T> w, op::Var<T> b, std::string name = "");

  std::string type_name() const override { return "FullyConnected"; }
  std::int64_t units() const noexcept { return units_; }
  bool has_bias() const noexcept { return static_cast<bool>(b_); }
  const op::Var<T>& get_weight() const noexcept { return w_; }
  /// Empty handle without a bias.
  const op::Var<T>& get_bias() const noexcept { return b_; }

 private:
  void build();

  std::int64_t units_ = 0;
  op::Var<T> w_, b_;
};

/// v1: `layer::fullyconnected(x, units, use_bias)`; `weight_init` chooses
/// the initializer.
template <typename T>
Ref<FullyConnectedLayer<T>> fullyconnected(const op::Expr<T>& x, std::int64_t units, bool use_bias = true,
                                           const tensor_filler_t<T>& weight_init = {GLOROT}) {
  return make_layer<FullyConnectedLayer<T>>(x, units, use_bias, weight_init);
}
template <typename T>
Ref<FullyConnectedLayer<T>> fullyconnected(op::Operation<T>* x, std::int64_t units, bool use_bias = true,
                                           const tensor_filler_t<T>& weight_init = {GLOROT}) {
  return make_layer<FullyConnectedLayer<T>>(op::Expr<T>(x), units, use_bias, weight_init);
}
/// Tells the layer which activation follows it, which picks the initializer
/// (init_for: He for the rectifiers, Glorot otherwise). The activation
/// itself is still a separate layer.
template <typename T>
Ref<FullyConnectedLayer<T>> fullyconnected(const op::Expr<T>& x, std::int64_t units, bool use_bias,
                                           activation_t followed_by) {
  return make_layer<FullyConnectedLayer<T>>(x, units, use_bias, init_for<T>(followed_by));
}

}  // namespace magmadnn::layer
