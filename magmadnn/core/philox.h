/// @file philox.h
/// Philox4x32-10 counter-based generator (Salmon et al., SC'11), shared by the
/// host and the GPU so that a seeded fill gives the same numbers on both.
///
/// A random value is a pure function of (seed, stream, index): no state is
/// carried between calls, so fills parallelise freely and repeat exactly.
#pragma once

#include <cstdint>

#include "magmadnn/core/config.h"

namespace magmadnn::philox {

struct u32x4 {
  std::uint32_t v[4];
};

MAGMADNN_HD inline void mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}

/// Ten Philox rounds on a 128-bit counter under a 64-bit key.
MAGMADNN_HD inline u32x4 block(std::uint64_t key, std::uint64_t ctr_lo, std::uint64_t ctr_hi) {
  std::uint32_t c0 = static_cast<std::uint32_t>(ctr_lo), c1 = static_cast<std::uint32_t>(ctr_lo >> 32);
  std::uint32_t c2 = static_cast<std::uint32_t>(ctr_hi), c3 = static_cast<std::uint32_t>(ctr_hi >> 32);
  std::uint32_t k0 = static_cast<std::uint32_t>(key), k1 = static_cast<std::uint32_t>(key >> 32);
  for (int r = 0; r < 10; ++r) {
    std::uint32_t hi0, lo0, hi1, lo1;
    mulhilo(0xD2511F53u, c0, hi0, lo0);
    mulhilo(0xCD9E8D57u, c2, hi1, lo1);
    const std::uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return u32x4{{c0, c1, c2, c3}};
}

/// Uniform in [0, 1) with 24 random bits.
MAGMADNN_HD inline float to_unit_float(std::uint32_t x) { return static_cast<float>(x >> 8) * (1.0f / 16777216.0f); }
/// Uniform in [0, 1) with 53 random bits.
MAGMADNN_HD inline double to_unit_double(std::uint32_t a, std::uint32_t b) {
  const std::uint64_t x = (static_cast<std::uint64_t>(a) << 21) ^ (b >> 11);
  return static_cast<double>(x & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/// The i-th uniform number of a stream in [0, 1): one Philox block yields four
/// consecutive float draws, or two double draws.
template <typename R>
MAGMADNN_HD inline R uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t i);
template <>
MAGMADNN_HD inline float uniform<float>(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  const u32x4 b = block(seed, i >> 2, stream);
  return to_unit_float(b.v[i & 3]);
}
template <>
MAGMADNN_HD inline double uniform<double>(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  const u32x4 b = block(seed, i >> 1, stream);
  return (i & 1) ? to_unit_double(b.v[2], b.v[3]) : to_unit_double(b.v[0], b.v[1]);
}

}  // namespace magmadnn::philox
