/// @file dropout_layer.h
/// layer::DropoutLayer<T>: in training, zeroes each element with probability
/// `dropout_rate` and scales the kept ones by 1 / (1 - rate) (inverted
/// dropout, so eval needs no rescaling); in eval mode, the identity.
///
/// MagmaDNN v1 compatibility: the rate is the probability of *dropping*
/// (v1's meaning; op::dropout takes the keep probability, 1 - rate), default
/// 0.2. v1's `seed` argument is accepted and ignored: masks come from the
/// global Philox seed (set_seed), a fresh stream per mask, so runs repeat
/// exactly for a given seed. Requires 0 <= rate < 1 (ValueError otherwise).
#pragma once

#include "magmadnn/layer/layer.h"

namespace magmadnn::layer {

inline constexpr float kDefaultDropoutRate = 0.2f;

template <typename T>
class DropoutLayer : public Layer<T> {
 public:
  DropoutLayer(op::Expr<T> x, double dropout_rate = kDefaultDropoutRate, std::string name = "");
  std::string type_name() const override { return "Dropout"; }
  double dropout_rate() const noexcept { return rate_; }

 private:
  double rate_;
};

/// v1: `layer::dropout(x, rate, seed)` (seed ignored, see above).
template <typename T>
Ref<DropoutLayer<T>> dropout(const op::Expr<T>& x, float dropout_rate = kDefaultDropoutRate,
                             unsigned long long /*seed*/ = 0) {
  return make_layer<DropoutLayer<T>>(x, dropout_rate);
}
template <typename T>
Ref<DropoutLayer<T>> dropout(op::Operation<T>* x, float dropout_rate = kDefaultDropoutRate,
                             unsigned long long /*seed*/ = 0) {
  return make_layer<DropoutLayer<T>>(op::Expr<T>(x), dropout_rate);
}

}  // namespace magmadnn::layer
