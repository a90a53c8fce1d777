#include "magmadnn/optimizer/large_batch_lr.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "magmadnn/core/errors.h"

namespace magmadnn::optimizer {

const std::vector<std::string>& lr_scaling_names() {
  static const std::vector<std::string> names = {"none", "linear", "sqrt"};  // enum order
  return names;
}

LRScaling lr_scaling_from_name(std::string_view name) {
  const auto& names = lr_scaling_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<LRScaling>(i);
  }
  std::ostringstream known;
  for (std::size_t i = 0; i < names.size(); ++i) known << (i ? ", " : "") << names[i];
  MAGMADNN_THROW(ValueError, "unknown learning-rate scaling \"" << name << "\" (known: " << known.str() << ")");
}

double lr_scale_factor(LRScaling rule, std::int64_t global_batch, std::int64_t base_batch) {
  MAGMADNN_CHECK(global_batch >= 1 && base_batch >= 1, ValueError,
                 "lr_scale_factor: batches must be >= 1, got global " << global_batch << " and base " << base_batch);
  const double ratio = static_cast<double>(global_batch) / static_cast<double>(base_batch);
  switch (rule) {
    case LRScaling::None: return 1.0;
    case LRScaling::Linear: return ratio;
    case LRScaling::Sqrt: return std::sqrt(ratio);
  }
  MAGMADNN_THROW(ValueError, "lr_scale_factor: unknown LRScaling value " << static_cast<int>(rule));
}

LargeBatchLR::LargeBatchLR(LRScaling rule, std::int64_t batch_size, std::int64_t base_batch, std::int64_t world_size,
                           std::int64_t warmup_steps, std::shared_ptr<const LRSchedule> after)
    : global_batch_(0), scale_(1.0), warmup_(warmup_steps), after_(std::move(after)) {
  MAGMADNN_CHECK(batch_size >= 1 && base_batch >= 1 && world_size >= 1, ValueError,
                 "LargeBatchLR: batch_size, base_batch and world_size must be >= 1, got "
                     << batch_size << ", " << base_batch << " and " << world_size);
  MAGMADNN_CHECK(batch_size <= std::numeric_limits<std::int64_t>::max() / world_size, ValueError,
                 "LargeBatchLR: the global batch " << batch_size << " x " << world_size << " overflows");
  MAGMADNN_CHECK(warmup_steps >= 0, ValueError, "LargeBatchLR: warmup_steps must be >= 0, got " << warmup_steps);
  global_batch_ = batch_size * world_size;
  scale_ = lr_scale_factor(rule, global_batch_, base_batch);
}

double LargeBatchLR::lr(double base_lr, std::int64_t step) const {
  const double target = base_lr * scale_;
  if (step < warmup_) {
    const double w = static_cast<double>(warmup_);
    // A batch below the reference (k < 1): a warm-up from the unscaled rate
    // would start above the target; climb from target / W instead, as
    // WarmupLR does.
    if (scale_ < 1.0) return target * static_cast<double>(step + 1) / w;
    return base_lr + (target - base_lr) * static_cast<double>(step) / w;
  }
  return after_ ? after_->lr(target, step - warmup_) : target;
}

}  // namespace magmadnn::optimizer
