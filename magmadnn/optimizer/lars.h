/// @file lars.h
/// LARS: layer-wise adaptive rate scaling (You, Gitman & Ginsburg 2017,
/// "Large Batch Training of Convolutional Networks"), SGD with momentum
/// whose step for each parameter tensor is scaled by a trust ratio:
///
///   trust = eta * ||w|| / (||g|| + beta * ||w||)      (1 when ||w|| or ||g|| is 0)
///   v     = mu * v + lr * trust * (g + beta * w)
///   w    -= v
///
/// with lr the (scheduled) global rate, eta the trust coefficient, beta the
/// weight decay and mu the momentum. Because ||w|| / ||g|| is taken per
/// tensor, a layer whose gradients are large next to its weights takes a
/// proportionally smaller step, which is what keeps large-batch SGD stable
/// at rates where one global rate diverges in some layer.
///
/// Requires: lr >= 0, mu in [0, 1), eta > 0, beta >= 0. Guarantees: no NaN
/// from the trust ratio (a zero weight or a zero gradient gives trust 1:
/// a fresh zero-initialised bias moves with the plain rate); with
/// `exclude_vectors`, tensors of fewer than two dimensions (biases, the
/// scale and shift of a normalisation layer) get neither the trust ratio nor
/// the weight decay, as in the usual large-batch recipes; the one state slot
/// ("velocity") is saved and restored by checkpoints like SGD's. Weight
/// decay is LARS's own (inside the trust ratio): do not also call
/// set_weight_decay, which would add a second L2 term.
///
/// A parameter declared a slice of a split tensor (Optimizer::set_slice_sum,
/// as NeuralNetwork does for model-parallel layers) takes the norms of the
/// whole tensor: its ranks sum their slices' squares (one allreduce of two
/// doubles per slice and step), so the trust ratio is the one-process one.
#pragma once

#include "magmadnn/optimizer/optimizer_base.h"

namespace magmadnn::optimizer {

/// LARS's hyperparameters beyond the learning rate (defaults from You et al.).
struct LarsOptions {
  double momentum = 0.9;
  double weight_decay = 0.0;         ///< beta
  double trust_coefficient = 0.001;  ///< eta
  bool exclude_vectors = false;      ///< biases and normalisation parameters: plain momentum SGD
};

template <typename T = float>
class Lars : public Optimizer<T> {
 public:
  explicit Lars(double learning_rate, LarsOptions options = {});
  const LarsOptions& options() const noexcept { return o_; }
  /// The trust ratio LARS applies to a tensor with weights `w` and gradient
  /// `g` (exposed for tests and diagnostics).
  double trust_ratio(const Tensor<T>& w, const Tensor<T>& g) const;

 protected:
  std::vector<std::string> slot_names() const override { return {"velocity"}; }
  void update(Tensor<T>& param, const Tensor<T>& grad, double lr, std::int64_t t,
              std::vector<Tensor<T>>& slots) override;

 private:
  LarsOptions o_;
};
Lars(double) -> Lars<float>;
Lars(double, LarsOptions) -> Lars<float>;

}  // namespace magmadnn::optimizer
