/// @file autocast.h
/// The autocast policy: which kinds of operation compute in low precision
/// when a run asks for bf16 or fp16, written once, in one table
/// (autocast.cpp), for every op and backend to consult.
///
///   GEMM (matmul, linear) and convolution: low precision operands, float
///     accumulation and float output; these are where the arithmetic is, and
///     a dot product of K terms loses only about eps * sqrt(K) relative.
///   softmax, cross-entropy, reductions, normalisation, the loss, pooling and
///     elementwise ops: float. Exponentials and long sums overflow or lose
///     small terms in an 8-bit mantissa, and these ops are memory-bound, so
///     low precision would buy no speed.
///
/// A run enters a precision with an AutocastScope; graph nodes ask
/// low_precision(kind) when they evaluate. The scope is per thread (the
/// thread that evaluates the graph), so tests and parallel runs in one
/// process do not see each other's setting.
///
/// Low-precision copies of node outputs are cached on the node until its
/// version changes (op::Operation::low_output), so a weight is cast once per
/// step whatever the number of GEMMs that read it, and not at all when the
/// optimizer's update writes the copy as it writes the weight
/// (fused_update_casts()); cast_count() counts every cast, for tests.
#pragma once

#include <cstdint>
#include <span>

#include "magmadnn/core/precision.h"
#include "magmadnn/core/types.h"

namespace magmadnn::autocast {

/// The kinds of operation the policy distinguishes.
enum class OpKind : unsigned char {
  Gemm,           ///< matmul, linear (fully connected)
  Conv,           ///< convolution, all three passes
  Softmax,        ///< softmax, log-softmax
  CrossEntropy,   ///< cross-entropy and the fused softmax cross-entropy
  Reduction,      ///< sum, mean, max, argmax, norms
  Normalization,  ///< batch normalisation
  Loss,           ///< every loss function and the value fit reports
  Pooling,        ///< max and average pooling
  Elementwise,    ///< activations, arithmetic, optimizer updates
};

struct Rule {
  OpKind kind;
  const char* name;
  bool low_precision;  ///< computes in the run's low precision (bf16/fp16)
  const char* why;
};

/// The policy, one row per OpKind in enum order.
std::span<const Rule> table();
/// The rule of one kind.
const Rule& rule(OpKind kind);

/// The element type `kind` computes in under precision `p`: bf16 or f16 for
/// a low-precision kind under BF16/FP16, f32 otherwise (TF32 keeps float
/// storage; it changes how the GPU multiplies, not the operands' type).
dtype compute_dtype(OpKind kind, Precision p);

/// The precision set by the innermost live AutocastScope of this thread
/// (FP32 when none).
Precision current() noexcept;
/// compute_dtype(kind, current()) == bf16: whether a node of `kind` should
/// take its bf16 path now.
bool bf16(OpKind kind) noexcept;

/// Runs f(L()) with L = bfloat16 or half, the type ops of `kind` compute in
/// on this thread now (compute_dtype(kind, current())), and returns true;
/// returns false without calling f when they compute in float. The one
/// place a node turns the run's precision into an element type, so that its
/// low-precision path is written once for both.
template <typename F>
bool with_low_precision(OpKind kind, F&& f) {
  switch (compute_dtype(kind, current())) {
    case dtype::bf16: f(bfloat16()); return true;
    case dtype::f16: f(half()); return true;
    default: return false;
  }
}

/// Sets the thread's precision for its lifetime and restores the previous
/// one on destruction (scopes nest).
class AutocastScope {
 public:
  explicit AutocastScope(Precision p) noexcept;
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  Precision previous_;
};

/// Number of float -> low-precision casts of whole tensors done so far, in
/// this process (all threads).
std::uint64_t cast_count() noexcept;
/// Records one such cast (called by the code that casts).
void count_cast() noexcept;

/// Whether parameter updates under bf16 or fp16 write the parameters'
/// low-precision copies with the float masters (LowPrecisionCache::axpby),
/// so that a step casts no weight; on by default. Off, each weight is cast
/// by the first GEMM that reads it after its update, as before. The results
/// are the same bit for bit either way; the switch exists to compare the two
/// (tests, benchmarks). Process-wide.
bool fused_update_casts() noexcept;
void set_fused_update_casts(bool on) noexcept;

}  // namespace magmadnn::autocast
