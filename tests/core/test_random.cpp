#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "magmadnn/core/philox.h"
#include "magmadnn/core/random.h"

using namespace magmadnn;

TEST(Philox, KnownAnswer) {
  // Random123's published known-answer vector for philox4x32-10 with
  // counter = key = 0: {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}.
  const philox::u32x4 r = philox::block(0, 0, 0);
  EXPECT_EQ(r.v[0], 0x6627e8d5u);
  EXPECT_EQ(r.v[1], 0xe169c58du);
  EXPECT_EQ(r.v[2], 0xbc57ac4cu);
  EXPECT_EQ(r.v[3], 0x9b00dbd8u);
  // counter = {243f6a88 85a308d3 13198a2e 03707344}, key = {a4093822 299f31d0}
  const philox::u32x4 p = philox::block(0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, 0x0370734413198a2eull);
  EXPECT_EQ(p.v[0], 0xd16cfe09u);
  EXPECT_EQ(p.v[1], 0x94fdccebu);
  EXPECT_EQ(p.v[2], 0x5001e420u);
  EXPECT_EQ(p.v[3], 0x24126ea1u);
}

TEST(Philox, UniformRangeAndMean) {
  double sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float u = philox::uniform<float>(7, 3, std::uint64_t(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
}

TEST(Random, StreamsAreDistinctAndSeedsRepeat) {
  set_seed(42);
  const auto s0 = next_random_stream(), s1 = next_random_stream();
  EXPECT_NE(s0, s1);
  const RngState st = get_rng_state();
  const auto s2 = next_random_stream();
  set_rng_state(st);
  EXPECT_EQ(next_random_stream(), s2);
  set_seed(42);
  EXPECT_EQ(next_random_stream(), s0);
  EXPECT_EQ(get_seed(), 42u);
}
