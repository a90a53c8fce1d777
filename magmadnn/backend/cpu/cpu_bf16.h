/// @file cpu_bf16.h
/// Rounding float to bfloat16 on the host, the hot part of mixed precision
/// that is ours rather than oneDNN's: the casts of weights and activations
/// (Backend::convert) and the parameter update that writes a weight's bf16
/// copy as it writes the weight (Kernels::axpby_bf16).
///
/// Guarantees: every value is rounded to nearest even exactly as
/// bfloat16(float) rounds (NaNs stay NaN, quieted; subnormals are kept, not
/// flushed), in integer arithmetic, so the vector versions chosen for the
/// CPU give the same bits as the scalar formula.
#pragma once

#include <cstdint>

#include "magmadnn/core/half.h"

namespace magmadnn::cpu {

/// Elements per block of the blocked bf16 loops: the float block and its
/// rounding stay in L1 between the two.
inline constexpr std::int64_t kBf16Block = 2048;

/// y[i] = bfloat16(x[i]) for i < n, over OpenMP threads for large n.
void round_to_bf16(const float* x, bfloat16* y, std::int64_t n);
/// The same on one thread, for a caller that already split the work.
void round_to_bf16_serial(const float* x, bfloat16* y, std::int64_t n);

}  // namespace magmadnn::cpu
