// The dynamic loss scaler's logic, on the CPU with synthetic gradients: an
// overflow is skipped, logged with its step number, and halves the scale;
// a run of good steps doubles it; good steps are unscaled exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "magmadnn/core/errors.h"
#include "magmadnn/optimizer/loss_scaler.h"

using namespace magmadnn;
using optimizer::LossScaler;

namespace {

Tensor<float> grad(std::vector<float> v) {
  return Tensor<float>::from_vector({static_cast<std::int64_t>(v.size())}, v, HOST);
}

TEST(LossScaler, FindsInfAndNanAnywhere) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(optimizer::all_finite(grad({1.f, -3e38f, 3e38f, 3e38f})));  // a sum that would overflow is not inf
  EXPECT_FALSE(optimizer::all_finite(grad({1.f, inf, 2.f})));
  EXPECT_FALSE(optimizer::all_finite(grad({-inf})));
  EXPECT_FALSE(optimizer::all_finite(grad({0.f, 0.f, nan})));
  EXPECT_TRUE(optimizer::all_finite(Tensor<float>()));
}

TEST(LossScaler, SkipsOverflowHalvesAndRecovers) {
  LossScaler::Options o;
  o.init_scale = 1024;
  o.growth_interval = 3;
  LossScaler s(o);
  std::vector<std::int64_t> logged;
  s.set_on_skip([&](const LossScaler::Skip& k) { logged.push_back(k.step); });

  // Synthetic gradients of a loss scaled by s.scale(): g * scale, which
  // overflows float when g * scale > 3.4e38.
  const float g_true = 0.5f;
  auto scaled = [&](double overflow_above) {
    const double v = g_true * s.scale();
    return grad({static_cast<float>(v > overflow_above ? HUGE_VAL : v), static_cast<float>(-v / 4)});
  };
  std::vector<bool> taken;
  std::vector<double> scales;
  for (std::int64_t step = 1; step <= 10; ++step) {
    // Steps 2 and 3 overflow at the scale they see (anything above 100);
    // afterwards the range is back to normal.
    Tensor<float> g = scaled(step == 2 || step == 3 ? 100.0 : 1e30);
    const double before = s.scale();
    const bool ok = s.unscale<float>({&g}, step);
    taken.push_back(ok);
    scales.push_back(s.scale());
    if (ok) {
      // Unscaled exactly: the scale is a power of two.
      EXPECT_EQ(g.get(std::int64_t{0}), g_true) << "step " << step;
      EXPECT_EQ(g.get(std::int64_t{1}), -g_true / 4) << "step " << step;
    } else {
      EXPECT_TRUE(std::isinf(g.get(std::int64_t{0}))) << "a skipped step leaves the gradients alone";
      EXPECT_EQ(s.scale(), before / 2);
    }
  }
  EXPECT_EQ(taken, (std::vector<bool>{true, false, false, true, true, true, true, true, true, true}));
  EXPECT_EQ(logged, (std::vector<std::int64_t>{2, 3}));
  ASSERT_EQ(s.skips().size(), 2u);
  EXPECT_EQ(s.skips()[0].scale_before, 1024);
  EXPECT_EQ(s.skips()[0].scale_after, 512);
  EXPECT_EQ(s.skips()[1].scale_after, 256);
  // Growth after 3 good steps in a row: steps 4-6 -> 512, steps 7-9 -> 1024.
  EXPECT_EQ(scales, (std::vector<double>{1024, 512, 256, 256, 256, 512, 512, 512, 1024, 1024}));
}

TEST(LossScaler, ScaleStaysWithinItsBounds) {
  LossScaler::Options o;
  o.init_scale = 4;
  o.min_scale = 1;
  o.max_scale = 8;
  o.growth_interval = 1;
  LossScaler s(o);
  Tensor<float> bad = grad({std::numeric_limits<float>::infinity()});
  for (int i = 0; i < 5; ++i) s.unscale<float>({&bad}, i);
  EXPECT_EQ(s.scale(), 1);
  for (int i = 0; i < 5; ++i) {
    Tensor<float> ok = grad({1.f});
    s.unscale<float>({&ok}, 10 + i);
  }
  EXPECT_EQ(s.scale(), 8);
}

TEST(LossScaler, RejectsOptionsThatCannotWork) {
  LossScaler::Options o;
  o.backoff = 1.0;
  EXPECT_THROW(LossScaler{o}, ValueError);
  o = {};
  o.growth = 1.0;
  EXPECT_THROW(LossScaler{o}, ValueError);
  o = {};
  o.min_scale = 2 * o.init_scale;
  EXPECT_THROW(LossScaler{o}, ValueError);
}

}  // namespace
