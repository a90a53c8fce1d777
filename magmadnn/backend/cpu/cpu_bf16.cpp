#include "magmadnn/backend/cpu/cpu_bf16.h"

#include <algorithm>
#include <bit>

#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/backend/cpu/simd_clones.h"

namespace magmadnn::cpu {

// bfloat16's constructor (detail::float_to_bf16_bits) written so that the
// compiler vectorises it: a select instead of an early return. The library
// is built for baseline x86-64, which has no instruction to narrow 32-bit
// lanes to 16 without saturation; the AVX2 and AVX-512 clones do (the
// update and cast of the 528x784 MLP weight, one thread: 0.21 ms with the
// baseline loop, 0.10 ms with the clones; bench_bf16_update).
// AVX-512 BF16's own vcvtneps2bf16 is not used: it flushes subnormals to
// zero, so it would not give bfloat16(float)'s bits.
MAGMADNN_SIMD_CLONES
void round_to_bf16_serial(const float* x, bfloat16* y, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t b = std::bit_cast<std::uint32_t>(x[i]);
    const std::uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
    const std::uint32_t quiet_nan = (b >> 16) | 0x40u;
    y[i].bits = static_cast<std::uint16_t>((b & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
}

void round_to_bf16(const float* x, bfloat16* y, std::int64_t n) {
  const std::int64_t blocks = (n + kBf16Block - 1) / kBf16Block;
  parallel_for(blocks, n > kParallelThreshold, [=](std::int64_t k) {
    const std::int64_t i = k * kBf16Block;
    round_to_bf16_serial(x + i, y + i, std::min(kBf16Block, n - i));
  });
}

}  // namespace magmadnn::cpu
