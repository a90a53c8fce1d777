/// @file bf16_cache.h
/// Bf16Cache: a bfloat16 copy of one tensor, recast only when the tensor
/// changed (mixed precision: each weight is cast once per step however many
/// GEMMs read it, and an activation cast for the forward GEMM is reused by
/// the weight-gradient GEMM of backward). A parameter update can keep the
/// copy current as it writes the parameter (axpby), so that weight needs no
/// cast at all.
///
/// Requires: the source is float or double. Guarantees: get(src) returns a
/// tensor of src's shape and memory holding src's values rounded to nearest
/// even; it casts only when src's write stamp, offset or shape differ from
/// the last time the copy was made current (Tensor::write_stamp), and counts
/// each cast here and in autocast::cast_count(). axpby's copy is bit for bit
/// the one get() would cast.
#pragma once

#include <cstdint>

#include "magmadnn/tensor/tensor.h"

namespace magmadnn::op {

class Bf16Cache {
 public:
  template <typename T>
  const Tensor<bfloat16>& get(const Tensor<T>& src);

  /// y = alpha * x + beta * y, for y the tensor this cache copies (a
  /// parameter, updated by an optimizer). When the cache already holds a
  /// copy of a tensor of y's shape, offset and memory (a bf16 GEMM has read
  /// y), the thread computes in bf16 and autocast::fused_update_casts() is
  /// on, the same pass writes the copy (math::axpby with y16), which is then
  /// current for y's new stamp: the next get(y) casts nothing. Otherwise a
  /// plain axpby: nothing reads y in bf16, so a copy would be wasted work.
  /// If the kernel throws, the copy stays stale and is recast by the next
  /// get().
  template <typename T>
  void axpby(T alpha, const Tensor<T>& x, T beta, Tensor<T>& y);

  /// Casts done by this cache so far.
  std::uint64_t casts() const noexcept { return casts_; }
  /// Updates that wrote the copy in the same pass (axpby), so far.
  std::uint64_t fused_updates() const noexcept { return fused_; }
  /// Frees the copy.
  void clear();

 private:
  template <typename T>
  bool holds_copy_of(const Tensor<T>& src) const noexcept;

  Tensor<bfloat16> copy_;
  std::uint64_t stamp_ = 0;
  std::int64_t offset_ = -1;
  std::uint64_t casts_ = 0;
  std::uint64_t fused_ = 0;
};

}  // namespace magmadnn::op
