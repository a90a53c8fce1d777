/// @file loss_scaler.h
/// LossScaler: dynamic loss scaling for fp16 training (Micikevicius et al.,
/// "Mixed Precision Training", 2018; the policy of PyTorch's GradScaler).
///
/// fp16 gradients underflow below 2^-24; multiplying the loss by a large
/// scale S lifts them into range, and the float gradients are divided by S
/// before the optimizer sees them. Too large an S overflows instead, so S
/// adapts: a step whose gradients hold an inf or NaN is skipped (the
/// optimizer does not run), logged with its step number, and S is multiplied
/// by backoff (1/2); after `growth_interval` good steps in a row S is
/// multiplied by growth (2). bf16 has float's exponent range and needs none
/// of this; the training run uses a scaler only at precision fp16.
///
/// Requires: growth > 1, 0 < backoff < 1, growth_interval >= 1,
/// 0 < min_scale <= init_scale (ValueError otherwise). Guarantees: scale()
/// stays in [min_scale, max_scale]; unscale() either returns false and
/// leaves the gradients unchanged (a skip), or divides every gradient by
/// the scale in place and returns true.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "magmadnn/tensor/tensor.h"

namespace magmadnn::optimizer {

class LossScaler {
 public:
  struct Options {
    double init_scale = 65536.0;  ///< 2^16
    double growth = 2.0;
    double backoff = 0.5;
    std::int64_t growth_interval = 2000;
    double min_scale = 1.0;
    double max_scale = 16777216.0;  ///< 2^24
  };
  /// One skipped step: its number and the scale before and after.
  struct Skip {
    std::int64_t step;
    double scale_before, scale_after;
  };

  LossScaler();
  explicit LossScaler(const Options& options);

  /// The factor the loss (equivalently, the gradient seed of backward) is
  /// multiplied by this step.
  double scale() const noexcept { return scale_; }

  /// After backward at step `step` (the optimizer's step number): true, with
  /// every gradient divided by scale(), when all are finite; false, with the
  /// skip logged and the scale backed off, when any is not. Call once per
  /// step, then run the optimizer only on true.
  template <typename T>
  bool unscale(const std::vector<Tensor<T>*>& grads, std::int64_t step);

  /// Every skip so far, in order.
  const std::vector<Skip>& skips() const noexcept { return skips_; }
  /// Called on each skip (e.g. to print it); none by default.
  void set_on_skip(std::function<void(const Skip&)> f) { on_skip_ = std::move(f); }
  /// Good steps since the last skip or growth.
  std::int64_t good_steps() const noexcept { return good_; }

 private:
  Options opt_;
  double scale_;
  std::int64_t good_ = 0;
  std::vector<Skip> skips_;
  std::function<void(const Skip&)> on_skip_;
};

/// True when every element of `t` is finite (no inf, no NaN); runs where t lives.
template <typename T>
bool all_finite(const Tensor<T>& t);

}  // namespace magmadnn::optimizer
