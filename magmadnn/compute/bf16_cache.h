/// @file bf16_cache.h
/// Bf16Cache: a bfloat16 copy of one tensor, recast only when the tensor
/// changed (mixed precision: each weight is cast once per step however many
/// GEMMs read it, and an activation cast for the forward GEMM is reused by
/// the weight-gradient GEMM of backward).
///
/// Requires: the source is float or double. Guarantees: get(src) returns a
/// tensor of src's shape and memory holding src's values rounded to nearest
/// even; it casts only when src's write stamp, offset or shape differ from
/// the previous call's (Tensor::write_stamp), and counts each cast here and
/// in autocast::cast_count().
#pragma once

#include <cstdint>

#include "magmadnn/tensor/tensor.h"

namespace magmadnn::op {

class Bf16Cache {
 public:
  template <typename T>
  const Tensor<bfloat16>& get(const Tensor<T>& src);
  /// Casts done by this cache so far.
  std::uint64_t casts() const noexcept { return casts_; }
  /// Frees the copy.
  void clear();

 private:
  Tensor<bfloat16> copy_;
  std::uint64_t stamp_ = 0;
  std::int64_t offset_ = -1;
  std::uint64_t casts_ = 0;
};

}  // namespace magmadnn::op
