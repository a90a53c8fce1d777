#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "magmadnn/core/half.h"

using magmadnn::bfloat16;
using magmadnn::half;

// Reference conversion through exact arithmetic: the nearest representable
// binary16 value to x (ties to even), found by scanning all 65536 patterns once.
static float nearest_half_reference(float x) {
  static std::vector<float> values = [] {
    std::vector<float> v;
    for (std::uint32_t b = 0; b < 0x7c00; ++b) v.push_back(float(half::from_bits(std::uint16_t(b))));
    return v;
  }();
  const float ax = std::fabs(x);
  if (ax >= 65520.0f) return std::copysign(std::numeric_limits<float>::infinity(), x);
  auto it = std::lower_bound(values.begin(), values.end(), ax);
  if (it == values.end()) --it;  // between 65504 and the overflow threshold
  float best = *it;
  if (it != values.begin()) {
    const float lo = *(it - 1);
    const double dlo = double(ax) - lo, dhi = double(best) - ax;
    if (dlo < dhi) best = lo;
    else if (dlo == dhi) {  // tie: even mantissa
      const auto bits_lo = half(lo).bits;
      if ((bits_lo & 1) == 0) best = lo;
    }
  }
  return std::copysign(best, x);
}

TEST(Half, ExactValuesRoundTrip) {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const half h = half::from_bits(std::uint16_t(b));
    const float f = float(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(float(half(f)))) << b;
      continue;
    }
    EXPECT_EQ(half(f).bits, h.bits) << "pattern " << b << " value " << f;
  }
}

TEST(Half, RoundsToNearestEven) {
  std::uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    // Spread over the whole half range, subnormals included.
    const float x = std::ldexp(float(state >> 8) / 16777216.0f, int(state % 44) - 26) * ((state & 1) ? -1.f : 1.f);
    ASSERT_EQ(float(half(x)), nearest_half_reference(x)) << "x = " << x;
  }
}

TEST(Half, SpecialValues) {
  EXPECT_TRUE(std::isinf(float(half(1e6f))));
  EXPECT_TRUE(std::isnan(float(half(std::nanf("")))));
  EXPECT_EQ(float(half(65504.0f)), 65504.0f);
  EXPECT_EQ(float(half(5.9604645e-8f)), 5.9604645e-8f);  // smallest subnormal
  EXPECT_EQ(float(half(2.9802322e-8f)), 0.0f);             // exactly half of it: tie to even (0)
  EXPECT_TRUE(std::signbit(float(half(-0.0f))));
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(float(bfloat16(1.0f)), 1.0f);
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: ties to even gives 1.
  EXPECT_EQ(float(bfloat16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  // 1 + 3 * 2^-8 ties between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6.
  EXPECT_EQ(float(bfloat16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(float(bfloat16(std::nanf("")))));
  EXPECT_TRUE(std::isinf(float(bfloat16(std::numeric_limits<float>::infinity()))));
  for (float x : {3.14159f, -2.5e-3f, 1.7e30f}) EXPECT_NEAR(float(bfloat16(x)), x, std::fabs(x) / 128);
}
