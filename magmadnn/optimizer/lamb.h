/// @file lamb.h
/// LAMB: layer-wise adaptive moments (You et al. 2019, "Large Batch
/// Optimization for Deep Learning: Training BERT in 76 minutes"). Adam's
/// moments with bias correction, then LARS's idea on the resulting step:
///
///   m = b1 m + (1-b1) g;   v = b2 v + (1-b2) g^2
///   u = (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) + lambda * w
///   trust = ||w|| / ||u||                  (1 when ||w|| or ||u|| is 0)
///   w -= lr * trust * u
///
/// with lambda the (decoupled) weight decay. Each tensor's step thus has the
/// length lr * ||w||: relative to its weights, whatever the scale of its
/// gradients.
///
/// Requires: lr >= 0, betas in [0, 1), eps > 0, lambda >= 0. Guarantees: no
/// NaN from the trust ratio (zero weights or a zero step give trust 1); with
/// `exclude_vectors`, tensors of fewer than two dimensions (biases,
/// normalisation parameters) take the plain Adam step without decay; the
/// state slots "m" and "v" are saved and restored by checkpoints like
/// Adam's. Weight decay is LAMB's own: do not also call set_weight_decay.
///
/// A parameter declared a slice of a split tensor (Optimizer::set_slice_sum,
/// as NeuralNetwork does for model-parallel layers) takes the norms of the
/// whole tensor: its ranks sum their slices' squares (one allreduce of two
/// doubles per slice and step), so the trust ratio is the one-process one.
#pragma once

#include "magmadnn/optimizer/optimizer_base.h"

namespace magmadnn::optimizer {

/// LAMB's hyperparameters beyond the learning rate (defaults from You et al. 2019).
struct LambOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-6;
  double weight_decay = 0.0;     ///< lambda, decoupled
  bool exclude_vectors = false;  ///< biases and normalisation parameters: plain Adam step, no decay
};

template <typename T = float>
class Lamb : public Optimizer<T> {
 public:
  explicit Lamb(double learning_rate = 1e-3, LambOptions options = {});
  const LambOptions& options() const noexcept { return o_; }
  /// The trust ratio of the last update applied to a tensor (diagnostics, tests).
  double last_trust_ratio() const noexcept { return last_trust_; }

 protected:
  std::vector<std::string> slot_names() const override { return {"m", "v"}; }
  void update(Tensor<T>& param, const Tensor<T>& grad, double lr, std::int64_t t,
              std::vector<Tensor<T>>& slots) override;

 private:
  LambOptions o_;
  double last_trust_ = 1.0;
};
Lamb() -> Lamb<float>;
Lamb(double) -> Lamb<float>;
Lamb(double, LambOptions) -> Lamb<float>;

}  // namespace magmadnn::optimizer
