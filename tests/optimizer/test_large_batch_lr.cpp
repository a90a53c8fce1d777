// LargeBatchLR: the rate scaled with the global batch (batch x ranks) and the
// Goyal warm-up from the unscaled rate, at given steps against hand values.
#include <gtest/gtest.h>

#include <cmath>

#include "magmadnn/core/errors.h"
#include "magmadnn/optimizer/large_batch_lr.h"

using namespace magmadnn;
using optimizer::LargeBatchLR;
using optimizer::LRScaling;

TEST(LargeBatchLR, LinearScalingWithWarmupFromTheUnscaledRate) {
  // batch 64 on 4 ranks: global 256 against a base of 32, k = 8.
  const LargeBatchLR s(LRScaling::Linear, 64, 32, 4, 10);
  EXPECT_EQ(s.global_batch(), 256);
  EXPECT_EQ(s.scale(), 8.0);
  EXPECT_DOUBLE_EQ(s.lr(0.1, 0), 0.1);                 // lr / k of the scaled 0.8
  EXPECT_DOUBLE_EQ(s.lr(0.1, 1), 0.1 + 0.7 * 1 / 10);  // 0.17
  EXPECT_DOUBLE_EQ(s.lr(0.1, 5), 0.45);
  EXPECT_DOUBLE_EQ(s.lr(0.1, 9), 0.1 + 0.7 * 9 / 10);  // 0.73
  EXPECT_DOUBLE_EQ(s.lr(0.1, 10), 0.8);
  EXPECT_DOUBLE_EQ(s.lr(0.1, 1000), 0.8);
}

// Below the reference batch the warm-up climbs to the scaled rate from
// below (it used to start at the unscaled rate, 8x the target here, and
// fall to it).
TEST(LargeBatchLR, ABatchBelowTheReferenceWarmsUpFromBelow) {
  const LargeBatchLR s(LRScaling::Linear, 32, 256, 1, 4);  // k = 1/8: 0.1 -> 0.0125
  EXPECT_DOUBLE_EQ(s.scale(), 0.125);
  EXPECT_DOUBLE_EQ(s.lr(0.1, 0), 0.0125 * 1 / 4);
  EXPECT_DOUBLE_EQ(s.lr(0.1, 2), 0.0125 * 3 / 4);
  EXPECT_DOUBLE_EQ(s.lr(0.1, 3), 0.0125);
  EXPECT_DOUBLE_EQ(s.lr(0.1, 4), 0.0125);
  for (std::int64_t k = 0; k < 10; ++k) EXPECT_LE(s.lr(0.1, k), 0.0125 + 1e-15) << k;
}

TEST(LargeBatchLR, WorldSizeIsPartOfTheGlobalBatch) {
  const LargeBatchLR one(LRScaling::Linear, 64, 32, 1, 0);
  const LargeBatchLR two(LRScaling::Linear, 64, 32, 2, 0);
  EXPECT_DOUBLE_EQ(one.lr(0.1, 0), 0.2);
  EXPECT_DOUBLE_EQ(two.lr(0.1, 0), 0.4);
}

TEST(LargeBatchLR, SqrtAndNone) {
  const LargeBatchLR sq(LRScaling::Sqrt, 100, 25, 4, 0);  // global 400 / 25 = 16, k = 4
  EXPECT_DOUBLE_EQ(sq.lr(0.05, 0), 0.2);
  const LargeBatchLR none(LRScaling::None, 100, 25, 4, 4);
  EXPECT_DOUBLE_EQ(none.lr(0.05, 0), 0.05);
  EXPECT_DOUBLE_EQ(none.lr(0.05, 7), 0.05);
  EXPECT_EQ(optimizer::lr_scaling_from_name("sqrt"), LRScaling::Sqrt);
  EXPECT_THROW(optimizer::lr_scaling_from_name("quadratic"), ValueError);
}

TEST(LargeBatchLR, ComposesWithTheScheduleAfterTheWarmup) {
  // k = 4, 2 warm-up steps, then step decay by 0.5 every 3 steps of the scaled rate.
  const LargeBatchLR s(LRScaling::Linear, 128, 32, 1, 2, std::make_shared<optimizer::StepLR>(3, 0.5));
  EXPECT_DOUBLE_EQ(s.lr(0.1, 0), 0.1);
  EXPECT_DOUBLE_EQ(s.lr(0.1, 1), 0.25);
  EXPECT_DOUBLE_EQ(s.lr(0.1, 2), 0.4);   // after-step 0
  EXPECT_DOUBLE_EQ(s.lr(0.1, 4), 0.4);   // after-step 2
  EXPECT_DOUBLE_EQ(s.lr(0.1, 5), 0.2);   // after-step 3
  EXPECT_DOUBLE_EQ(s.lr(0.1, 8), 0.1);   // after-step 6
}

TEST(LargeBatchLR, RefusesBadSettings) {
  EXPECT_THROW(LargeBatchLR(LRScaling::Linear, 0, 32, 1, 0), ValueError);
  EXPECT_THROW(LargeBatchLR(LRScaling::Linear, 32, 0, 1, 0), ValueError);
  EXPECT_THROW(LargeBatchLR(LRScaling::Linear, 32, 32, 0, 0), ValueError);
  EXPECT_THROW(LargeBatchLR(LRScaling::Linear, 32, 32, 1, -1), ValueError);
  EXPECT_THROW(LargeBatchLR(LRScaling::Linear, std::int64_t{1} << 62, 32, 4, 0), ValueError);
}
