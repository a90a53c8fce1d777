#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "magmadnn/core/errors.h"
#include "magmadnn/optimizer/schedule.h"

using namespace magmadnn::optimizer;

TEST(Schedules, Step) {
  StepLR s(3, 0.1);
  EXPECT_DOUBLE_EQ(s.lr(1.0, 0), 1.0);
  EXPECT_DOUBLE_EQ(s.lr(1.0, 2), 1.0);
  EXPECT_NEAR(s.lr(1.0, 3), 0.1, 1e-15);
  EXPECT_NEAR(s.lr(1.0, 7), 0.01, 1e-15);
  EXPECT_THROW(StepLR(0, 0.5), magmadnn::ValueError);
}

TEST(Schedules, Exponential) {
  ExponentialLR s(0.5);
  EXPECT_DOUBLE_EQ(s.lr(2.0, 0), 2.0);
  EXPECT_DOUBLE_EQ(s.lr(2.0, 3), 0.25);
}

TEST(Schedules, Cosine) {
  CosineLR s(10, 0.1);
  EXPECT_DOUBLE_EQ(s.lr(1.0, 0), 1.0);
  EXPECT_NEAR(s.lr(1.0, 5), 0.55, 1e-12);
  EXPECT_NEAR(s.lr(1.0, 10), 0.1, 1e-12);
  EXPECT_NEAR(s.lr(1.0, 25), 0.1, 1e-12);
  EXPECT_NEAR(s.lr(1.0, 2), 0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi * 0.2)), 1e-12);
}

TEST(Schedules, WarmupThenCosine) {
  WarmupLR s(4, std::make_shared<CosineLR>(10));
  EXPECT_DOUBLE_EQ(s.lr(1.0, 0), 0.25);
  EXPECT_DOUBLE_EQ(s.lr(1.0, 3), 1.0);
  EXPECT_DOUBLE_EQ(s.lr(1.0, 4), 1.0);
  EXPECT_NEAR(s.lr(1.0, 9), 0.5, 1e-12);
  WarmupLR plain(2);
  EXPECT_DOUBLE_EQ(plain.lr(0.4, 0), 0.2);
  EXPECT_DOUBLE_EQ(plain.lr(0.4, 100), 0.4);
}
