/// @file schedule.h
/// Learning-rate schedules. An optimizer asks its schedule for the rate of
/// each step: lr(base_lr, step), step counting from 0. Schedules are small,
/// stateless and composable (warm-up wraps another schedule).
#pragma once

#include <cstdint>
#include <memory>

namespace magmadnn::optimizer {

class LRSchedule {
 public:
  virtual ~LRSchedule() = default;
  /// The learning rate at `step` (0 for the first step).
  virtual double lr(double base_lr, std::int64_t step) const = 0;
};

/// base * gamma^floor(step / step_size).
class StepLR : public LRSchedule {
 public:
  StepLR(std::int64_t step_size, double gamma);
  double lr(double base_lr, std::int64_t step) const override;

 private:
  std::int64_t step_size_;
  double gamma_;
};

/// base * gamma^step.
class ExponentialLR : public LRSchedule {
 public:
  explicit ExponentialLR(double gamma) : gamma_(gamma) {}
  double lr(double base_lr, std::int64_t step) const override;

 private:
  double gamma_;
};

/// Cosine annealing from base to min_lr over total_steps, then min_lr:
/// min + (base - min) * (1 + cos(pi * step / total)) / 2.
class CosineLR : public LRSchedule {
 public:
  explicit CosineLR(std::int64_t total_steps, double min_lr = 0.0);
  double lr(double base_lr, std::int64_t step) const override;

 private:
  std::int64_t total_;
  double min_lr_;
};

/// Linear warm-up: base * (step + 1) / warmup_steps for the first
/// warmup_steps steps, then `after` (counting its steps from the end of the
/// warm-up), or the constant base rate when `after` is null.
class WarmupLR : public LRSchedule {
 public:
  explicit WarmupLR(std::int64_t warmup_steps, std::shared_ptr<const LRSchedule> after = nullptr);
  double lr(double base_lr, std::int64_t step) const override;

 private:
  std::int64_t warmup_;
  std::shared_ptr<const LRSchedule> after_;
};

}  // namespace magmadnn::optimizer
