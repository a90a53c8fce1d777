#include "magmadnn/optimizer/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "magmadnn/core/errors.h"

namespace magmadnn::optimizer {

StepLR::StepLR(std::int64_t step_size, double gamma) : step_size_(step_size), gamma_(gamma) {
  MAGMADNN_CHECK(step_size > 0, ValueError, "StepLR: step_size must be positive, got " << step_size);
}
double StepLR::lr(double base_lr, std::int64_t step) const {
  return base_lr * std::pow(gamma_, static_cast<double>(step / step_size_));
}

double ExponentialLR::lr(double base_lr, std::int64_t step) const {
  return base_lr * std::pow(gamma_, static_cast<double>(step));
}

CosineLR::CosineLR(std::int64_t total_steps, double min_lr) : total_(total_steps), min_lr_(min_lr) {
  MAGMADNN_CHECK(total_steps > 0, ValueError, "CosineLR: total_steps must be positive, got " << total_steps);
}
double CosineLR::lr(double base_lr, std::int64_t step) const {
  const double t = static_cast<double>(std::min(step, total_)) / static_cast<double>(total_);
  return min_lr_ + (base_lr - min_lr_) * 0.5 * (1.0 + std::cos(std::numbers::pi * t));
}

WarmupLR::WarmupLR(std::int64_t warmup_steps, std::shared_ptr<const LRSchedule> after)
    : warmup_(warmup_steps), after_(std::move(after)) {
  MAGMADNN_CHECK(warmup_steps > 0, ValueError, "WarmupLR: warmup_steps must be positive, got " << warmup_steps);
}
double WarmupLR::lr(double base_lr, std::int64_t step) const {
  if (step < warmup_) return base_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_);
  return after_ ? after_->lr(base_lr, step - warmup_) : base_lr;
}

}  // namespace magmadnn::optimizer
