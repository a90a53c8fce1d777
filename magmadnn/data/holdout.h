/// @file holdout.h
/// A validation set held out of the training set, so that the per-epoch
/// validation curve (and early stopping) never looks at the test split:
/// the test split is then scored once, at the end.
///
///   auto h = data::holdout_split(n, 0.1, seed, &labels);   // 10% held out
///   Tensor<float> x_train = data::take_rows(x, h.train), x_val = data::take_rows(x, h.validation);
///
/// Guarantees: `train` and `validation` are disjoint, together hold every
/// index of [0, n) once, and are each sorted ascending. The choice is a pure
/// function of (n, fraction, seed, labels). With labels it is stratified:
/// each class gives round(fraction x its count) samples, so a rare class is
/// not lost from either side by chance. With fraction > 0 at least one
/// sample is held out.
#pragma once

#include <cstdint>
#include <vector>

#include "magmadnn/tensor/tensor.h"

namespace magmadnn::data {

struct Holdout {
  std::vector<std::int64_t> train;       ///< indices the model trains on
  std::vector<std::int64_t> validation;  ///< indices held out for validation
};

/// Splits [0, n). Requires 0 <= fraction < 1 (ValueError), labels (if given)
/// of size n with non-negative values (ValueError), and, for fraction > 0,
/// n >= 2 so that both parts are non-empty (ValueError naming n).
Holdout holdout_split(std::int64_t n, double fraction, std::uint64_t seed,
                      const std::vector<std::int64_t>* labels = nullptr);

/// A new host tensor of the rows `rows` (axis 0, in that order) of x.
/// IndexError for a row outside [0, x.shape[0]).
template <typename T>
Tensor<T> take_rows(const Tensor<T>& x, const std::vector<std::int64_t>& rows);

}  // namespace magmadnn::data
