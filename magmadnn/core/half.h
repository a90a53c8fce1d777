/// @file half.h
/// IEEE 754 binary16 (`half`) and bfloat16 storage types with exact
/// round-to-nearest-even conversions to and from float. They are storage
/// types: arithmetic converts to float first (dMath's "mixed mode").
#pragma once

#include <cstdint>
#include <cstring>

#include "magmadnn/core/config.h"

namespace magmadnn {

namespace detail {
MAGMADNN_HD inline std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}
MAGMADNN_HD inline float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// Round-to-nearest-even float -> binary16, with subnormals, infinities and NaN.
MAGMADNN_HD inline std::uint16_t float_to_half_bits(float f) {
  const std::uint32_t x = float_bits(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or NaN (keep NaN quiet and non-zero)
    return static_cast<std::uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  }
  if (absx >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {  // result is subnormal or zero
    if (absx < 0x33000000u) return static_cast<std::uint16_t>(sign);  // below half of the smallest subnormal
    // value = mant24 * 2^(e-150); in units of the smallest subnormal (2^-24) that is mant24 >> (126 - e).
    const std::uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(absx >> 23);
    std::uint32_t m = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (m & 1u))) ++m;
    return static_cast<std::uint16_t>(sign | m);
  }
  const std::uint32_t rebias = absx - 0x38000000u;  // exponent 127 -> 15
  const std::uint32_t rounded = (rebias + 0xfffu + ((rebias >> 13) & 1u)) >> 13;
  return static_cast<std::uint16_t>(sign | rounded);
}

MAGMADNN_HD inline float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    int e = -1;
    do {  // normalise the subnormal
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    return bits_float(sign | static_cast<std::uint32_t>(112 - e) << 23 | (mant & 0x3ffu) << 13);
  }
  return bits_float(sign | (exp + 112u) << 23 | mant << 13);
}

MAGMADNN_HD inline std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
MAGMADNN_HD inline float bf16_bits_to_float(std::uint16_t b) {
  return bits_float(static_cast<std::uint32_t>(b) << 16);
}
}  // namespace detail

/// IEEE 754 binary16. Layout-compatible with CUDA's __half.
struct half {
  std::uint16_t bits = 0;
  half() = default;
  MAGMADNN_HD half(float f) : bits(detail::float_to_half_bits(f)) {}  // NOLINT: implicit like a number
  MAGMADNN_HD half(double d) : half(static_cast<float>(d)) {}         // NOLINT
  MAGMADNN_HD half(int i) : half(static_cast<float>(i)) {}            // NOLINT
  MAGMADNN_HD operator float() const { return detail::half_bits_to_float(bits); }  // NOLINT
  MAGMADNN_HD static half from_bits(std::uint16_t b) { half h; h.bits = b; return h; }
};

/// bfloat16: the upper half of a float. Layout-compatible with CUDA's __nv_bfloat16.
struct bfloat16 {
  std::uint16_t bits = 0;
  bfloat16() = default;
  MAGMADNN_HD bfloat16(float f) : bits(detail::float_to_bf16_bits(f)) {}  // NOLINT
  MAGMADNN_HD bfloat16(double d) : bfloat16(static_cast<float>(d)) {}     // NOLINT
  MAGMADNN_HD bfloat16(int i) : bfloat16(static_cast<float>(i)) {}        // NOLINT
  MAGMADNN_HD operator float() const { return detail::bf16_bits_to_float(bits); }  // NOLINT
  MAGMADNN_HD static bfloat16 from_bits(std::uint16_t b) { bfloat16 h; h.bits = b; return h; }
};

static_assert(sizeof(half) == 2 && sizeof(bfloat16) == 2);

}  // namespace magmadnn
