/// @file layerwise.h
/// What LARS and LAMB share: the L2 norm of a tensor (on its own device;
/// of a slice, its part, summed over the slices by Optimizer::sum_over_slices),
/// the guarded ratio of two norms, and the test for the tensors that the
/// layer-wise recipes leave unadapted (biases, normalisation parameters).
#pragma once

#include <cmath>

#include "magmadnn/tensor/math.h"

namespace magmadnn::optimizer::detail {

/// ||x||_2^2, accumulated in double whatever T is.
template <typename T>
double sum_squares(const Tensor<T>& x) {
  const Tensor<T> sq = math::product(x, x);
  return static_cast<double>(math::sum_all(sq));
}

/// ||x||_2.
template <typename T>
double l2_norm(const Tensor<T>& x) {
  return std::sqrt(sum_squares(x));
}

/// num / den, or 1 when either is 0 (or not finite): a zero-initialised
/// tensor or a tensor with no gradient this step then moves at the plain
/// rate instead of not at all (or by NaN).
inline double guarded_ratio(double num, double den) {
  if (!(num > 0.0) || !(den > 0.0) || !std::isfinite(num) || !std::isfinite(den)) return 1.0;
  return num / den;
}

/// True for the tensors the usual recipes exclude from adaptation and weight
/// decay: those of fewer than two dimensions (biases; BatchNorm's gamma and beta).
template <typename T>
bool is_vector_like(const Tensor<T>& p) {
  return p.shape().ndim() < 2;
}

}  // namespace magmadnn::optimizer::detail
