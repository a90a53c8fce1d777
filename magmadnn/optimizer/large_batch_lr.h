/// @file large_batch_lr.h
/// The learning rate of large-batch training (Goyal et al. 2017, "Accurate,
/// Large Minibatch SGD"): the rate is set for a reference batch and scaled
/// with the GLOBAL batch (the batch of one rank times the number of ranks),
/// and the scaled rate is reached by a linear warm-up from the unscaled one.
///
///   k      = G / B (linear), sqrt(G / B) (sqrt) or 1 (none);  G = batch_size * world_size
///   lr(s)  = base + (k * base - base) * s / W      for step s < W (warm-up)
///          = after(k * base, s - W)                 afterwards (k * base without `after`)
///
/// with B the reference ("base") batch and W the warm-up steps. The rate thus
/// starts at base = (k * base) / k and climbs to k * base by step W, the
/// schedule of Goyal et al. Below the reference batch (k < 1) the unscaled
/// rate is above the target, so the warm-up instead climbs as WarmupLR's,
/// lr(s) = k * base * (s + 1) / W (e.g. ResNet-50's 0.1 for 256 images at
/// batch 32: from 0.0125 / W up to 0.0125); `after` (step, cosine, ...) then runs on the
/// scaled rate, counting its steps from the end of the warm-up, as WarmupLR's
/// does.
///
/// Requires: batch_size, base_batch and world_size >= 1, warmup_steps >= 0.
/// Guarantees: stateless (the rate is a function of the step alone, so a
/// resumed run continues it exactly); world_size is an input, never read
/// from the environment: one process passes 1.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "magmadnn/optimizer/schedule.h"

namespace magmadnn::optimizer {

enum class LRScaling { None, Linear, Sqrt };

/// "none", "linear", "sqrt", in enum order.
const std::vector<std::string>& lr_scaling_names();
/// The rule named `name` (ValueError listing the known names).
LRScaling lr_scaling_from_name(std::string_view name);
/// k for a global batch against the reference batch (see the file comment).
double lr_scale_factor(LRScaling rule, std::int64_t global_batch, std::int64_t base_batch);

class LargeBatchLR : public LRSchedule {
 public:
  LargeBatchLR(LRScaling rule, std::int64_t batch_size, std::int64_t base_batch, std::int64_t world_size,
               std::int64_t warmup_steps, std::shared_ptr<const LRSchedule> after = nullptr);
  double lr(double base_lr, std::int64_t step) const override;

  std::int64_t global_batch() const noexcept { return global_batch_; }
  double scale() const noexcept { return scale_; }
  std::int64_t warmup_steps() const noexcept { return warmup_; }

 private:
  std::int64_t global_batch_;
  double scale_;
  std::int64_t warmup_;
  std::shared_ptr<const LRSchedule> after_;
};

}  // namespace magmadnn::optimizer
