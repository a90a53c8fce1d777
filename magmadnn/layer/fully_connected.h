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
///
/// BiasForm::folded (SHM-Learn-Dist §4; config key "fold_bias") holds W and
/// b as one trainable matrix Wb = [b | W] {units, in_features + 1}, named
/// "Wb", and computes y = [1, x] Wb^T in one GEMM (op::folded_linear, which
/// says how backward goes). From the same seed its initial values are the
/// separate form's (W drawn the same, b zero), so the two train alike under
/// any optimizer that updates element by element (SGD, momentum, Adam...);
/// a layer-wise one (LARS, LAMB) sees one matrix where it saw W and b. A
/// checkpoint holds "<layer>/Wb" instead of "<layer>/W" and "<layer>/b",
/// so one written with either form is refused by the other (naming the
/// form). Slower than the separate bias on the CPU, where oneDNN adds b in
/// the GEMM's output pass (docs/seeds.md, SHM-Learn-Dist §4), so off by
/// default.
#pragma once

#include <cstdint>
#include <utility>

#include "magmadnn/layer/activation_layer.h"
#include "magmadnn/layer/layer.h"

namespace magmadnn::layer {

/// How a dense layer holds its bias: none, a vector added to the product
/// (oneDNN's bias post-op on the CPU), or folded into the weight matrix.
enum class BiasForm { none, separate, folded };

template <typename T>
class FullyConnectedLayer : public Layer<T> {
 public:
  FullyConnectedLayer(op::Expr<T> x, std::int64_t units, BiasForm bias,
                      const tensor_filler_t<T>& weight_init = {GLOROT}, std::string name = "");
  FullyConnectedLayer(op::Expr<T> x, std::int64_t units, bool use_bias = true,
                      const tensor_filler_t<T>& weight_init = {GLOROT}, std::string name = "")
      : FullyConnectedLayer(std::move(x), units, use_bias ? BiasForm::separate : BiasForm::none, weight_init,
                            std::move(name)) {}
  /// With given parameters (shared or pre-trained weights): w {units, in},
  /// b {units} or an empty handle for no bias.
  FullyConnectedLayer(op::Expr<T> x, op::Var<T> w, op::Var<T> b, std::string name = "");

  std::string type_name() const override { return "FullyConnected"; }
  std::int64_t units() const noexcept { return units_; }
  BiasForm bias_form() const noexcept { return form_; }
  bool has_bias() const noexcept { return form_ != BiasForm::none; }
  bool bias_folded() const noexcept { return form_ == BiasForm::folded; }
  /// W {units, in}; an empty handle when the bias is folded.
  const op::Var<T>& get_weight() const noexcept { return w_; }
  /// b {units}; an empty handle without a bias or when it is folded.
  const op::Var<T>& get_bias() const noexcept { return b_; }
  /// [b | W] {units, in + 1} when the bias is folded; else an empty handle.
  const op::Var<T>& get_folded() const noexcept { return wb_; }
  /// Host copies of W {units, in} and b {units} (b empty without a bias),
  /// whichever form holds them: what an exporter writes.
  std::pair<Tensor<T>, Tensor<T>> unfolded() const;

 private:
  void build();

  std::int64_t units_ = 0;
  BiasForm form_ = BiasForm::separate;
  op::Var<T> w_, b_, wb_;
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
/// `bias` chooses the form: layer::fullyconnected(x, 528, BiasForm::folded).
template <typename T>
Ref<FullyConnectedLayer<T>> fullyconnected(const op::Expr<T>& x, std::int64_t units, BiasForm bias,
                                           const tensor_filler_t<T>& weight_init = {GLOROT}) {
  return make_layer<FullyConnectedLayer<T>>(x, units, bias, weight_init);
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
