#include "magmadnn/optimizer/loss_scaler.h"

#include <algorithm>
#include <cmath>

#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::optimizer {

LossScaler::LossScaler() : LossScaler(Options{}) {}

LossScaler::LossScaler(const Options& options) : opt_(options), scale_(options.init_scale) {
  MAGMADNN_CHECK(opt_.growth > 1.0, ValueError, "LossScaler: growth " << opt_.growth << " must exceed 1");
  MAGMADNN_CHECK(opt_.backoff > 0.0 && opt_.backoff < 1.0, ValueError,
                 "LossScaler: backoff " << opt_.backoff << " must lie in (0, 1)");
  MAGMADNN_CHECK(opt_.growth_interval >= 1, ValueError,
                 "LossScaler: growth_interval " << opt_.growth_interval << " must be at least 1");
  MAGMADNN_CHECK(opt_.min_scale > 0.0 && opt_.min_scale <= opt_.init_scale && opt_.init_scale <= opt_.max_scale,
                 ValueError,
                 "LossScaler: need 0 < min_scale (" << opt_.min_scale << ") <= init_scale (" << opt_.init_scale
                                                    << ") <= max_scale (" << opt_.max_scale << ")");
}

namespace {
// Where the gradient is computed, not which memory could be read from the
// host: a MANAGED gradient on a machine with a GPU lives on the device, and
// reading it on the host copied every gradient down and (after the unscale
// wrote the host side) back up each step: 3 ms a step of the N = 4 MLP on
// an H100, four times its fp32 step.
template <typename T>
bool host_side(const Tensor<T>& t) {
  return !t.on_device();
}
}  // namespace

// On the host, serial passes rather than math:: calls: those enter OpenMP
// regions, and a step's dozen small regions each wait at a barrier for every
// thread; on a busy machine (load 4 on 2 cores) that cost 50 ms a step of
// the MLP, against well under 1 ms for the passes over its 420k gradients.
template <typename T>
bool all_finite(const Tensor<T>& t) {
  if (t.size() == 0) return true;
  if (host_side(t)) {
    const T* p = t.host_data();
    bool finite = true;
    for (std::int64_t i = 0; i < t.size(); ++i) finite &= std::isfinite(p[i]);
    return finite;
  }
  // On a device: x * 0 is 0 for a finite x and NaN for inf or NaN, and a sum
  // of zeros is exactly 0: one elementwise pass and one reduction, with no
  // false alarm from a sum of large finite values overflowing.
  Tensor<T> zeros = math::unary(UnaryOp::Scale, t.view({-1}), T(0));
  const T total = math::sum(zeros, 0).get(std::int64_t{0});
  return total == T(0);
}

template <typename T>
bool LossScaler::unscale(const std::vector<Tensor<T>*>& grads, std::int64_t step) {
  const bool finite = std::all_of(grads.begin(), grads.end(), [](const Tensor<T>* g) { return all_finite(*g); });
  if (!finite) {
    const Skip s{step, scale_, std::max(opt_.min_scale, scale_ * opt_.backoff)};
    scale_ = s.scale_after;
    good_ = 0;
    skips_.push_back(s);
    if (on_skip_) on_skip_(s);
    return false;
  }
  const T inv = static_cast<T>(1.0 / scale_);
  for (Tensor<T>* g : grads) {
    if (host_side(*g)) {
      T* p = g->mutable_host_data();
      for (std::int64_t i = 0; i < g->size(); ++i) p[i] *= inv;
    } else {
      math::unary(UnaryOp::Scale, *g, *g, inv);
    }
  }
  if (++good_ >= opt_.growth_interval) {
    scale_ = std::min(opt_.max_scale, scale_ * opt_.growth);
    good_ = 0;
  }
  return true;
}

template bool all_finite<float>(const Tensor<float>&);
template bool all_finite<double>(const Tensor<double>&);
template bool LossScaler::unscale<float>(const std::vector<Tensor<float>*>&, std::int64_t);
template bool LossScaler::unscale<double>(const std::vector<Tensor<double>*>&, std::int64_t);

}  // namespace magmadnn::optimizer
