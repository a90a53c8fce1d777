/// @file low_precision_cache.h
/// LowPrecisionCache: a copy of one tensor in the run's low precision
/// (bfloat16 or IEEE half, autocast::compute_dtype), recast only when the
/// tensor changed (mixed precision: each weight is cast once per step however
/// many GEMMs read it, and an activation cast for the forward GEMM is reused
/// by the weight-gradient GEMM of backward). A parameter update can keep the
/// copy current as it writes the parameter (axpby), so that weight needs no
/// cast at all.
///
/// Requires: the source is float or double; L is bfloat16 or half.
/// Guarantees: get<L>(src) returns a tensor of src's shape and memory holding
/// src's values rounded to nearest even in L; it casts only when src's write
/// stamp, offset, shape or the requested L differ from the last time the copy
/// was made current (Tensor::write_stamp), and counts each cast here and in
/// autocast::cast_count(). One copy is held at a time: asking for the other
/// type frees the first. axpby's copy is bit for bit the one get() would
/// cast.
#pragma once

#include <cstdint>

#include "magmadnn/core/types.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::op {

class LowPrecisionCache {
 public:
  template <typename L, typename T>
  const Tensor<L>& get(const Tensor<T>& src);

  /// y = alpha * x + beta * y, for y the tensor this cache copies (a
  /// parameter, updated by an optimizer). When the cache already holds a
  /// copy of a tensor of y's shape, offset and memory (a low-precision GEMM
  /// has read y), in the type the thread now computes GEMMs in
  /// (autocast::compute_dtype), and autocast::fused_update_casts() is on,
  /// the same call writes the copy (math::axpby with y16: one pass where the
  /// backend has the fused kernel, else axpby then a conversion), which is
  /// then current for y's new stamp: the next get(y) casts nothing.
  /// Otherwise a plain axpby: nothing reads y in low precision, so a copy
  /// would be wasted work. If the kernel throws, the copy stays stale and is
  /// recast by the next get().
  template <typename T>
  void axpby(T alpha, const Tensor<T>& x, T beta, Tensor<T>& y);

  /// y = beta * y + alpha * op(a) op(b), a weight-gradient product applied
  /// as it is made (math::gemm_update: in row tiles, never stored whole), for
  /// y the tensor this cache copies and a, b in L. The copy is written in the
  /// same sweep under axpby's conditions, with L the type the thread's GEMMs
  /// now read. Returns false, having done nothing, where the backend has no
  /// such kernel; the caller then makes the product and calls axpby.
  template <typename L>
  bool gemm_update(float alpha, const Tensor<L>& a, bool trans_a, const Tensor<L>& b, bool trans_b, float beta,
                   Tensor<float>& y);

  /// Casts done by this cache so far.
  std::uint64_t casts() const noexcept { return casts_; }
  /// Updates that wrote the copy in the same call (axpby), so far.
  std::uint64_t fused_updates() const noexcept { return fused_; }
  /// The element type of the copy held (f32 when none).
  dtype held() const noexcept { return held_; }
  /// Frees the copy.
  void clear();

 private:
  // The member holding the copy of type L (self: this cache, const or not).
  template <typename L, typename Self>
  static auto& copy_of_type(Self& self) noexcept;
  template <typename L, typename T>
  bool holds_copy_of(const Tensor<T>& src) const noexcept;
  // An update's write of y and its copy together (axpby, gemm_update): when
  // fused casts are on, the thread's GEMMs read L and this cache holds a
  // copy of y in L, runs write(copy), which writes y and the copy and
  // returns whether it did, and records the copy current for y's new stamp.
  // Returns whether the copy was written; false: write did not run, or
  // wrote nothing.
  template <typename L, typename T, typename W>
  bool write_through(Tensor<T>& y, W&& write);

  Tensor<bfloat16> bf16_;
  Tensor<half> f16_;
  dtype held_ = dtype::f32;
  std::uint64_t stamp_ = 0;
  std::int64_t offset_ = -1;
  std::uint64_t casts_ = 0;
  std::uint64_t fused_ = 0;
};

}  // namespace magmadnn::op
