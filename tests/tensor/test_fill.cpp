#include <gtest/gtest.h>

#include <cmath>

#include "magmadnn/core/errors.h"
#include "magmadnn/core/random.h"
#include "magmadnn/tensor/tensor.h"

using namespace magmadnn;

namespace {
struct Stats {
  double mean, var, min, max;
};
template <typename T>
Stats stats(const Tensor<T>& t) {
  const auto v = t.to_vector();
  double s = 0, s2 = 0, lo = 1e300, hi = -1e300;
  for (auto x : v) {
    const double d = double(float(x));
    s += d;
    s2 += d * d;
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  const double n = double(v.size());
  return {s / n, s2 / n - (s / n) * (s / n), lo, hi};
}
}  // namespace

TEST(Fill, ConstantsAndStructure) {
  EXPECT_EQ(Tensor<float>({3}, {ZERO}, HOST).to_vector(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(Tensor<float>({3}, {ONE}, HOST).to_vector(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(Tensor<double>({2}, {CONSTANT, -2.0f}, HOST).to_vector(), (std::vector<double>{-2, -2}));
  EXPECT_EQ(Tensor<float>({2}, {CONSTANT, {3}}, MANAGED).to_vector(), (std::vector<float>{3, 3}));
  EXPECT_EQ(Tensor<float>({2, 3}, {IDENTITY}, HOST).to_vector(), (std::vector<float>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(Tensor<float>({2, 2}, {DIAGONAL, {4, 5}}, HOST).to_vector(), (std::vector<float>{4, 0, 0, 5}));
  EXPECT_EQ(Tensor<float>({2, 2}, {DIAGONAL, {7}}, HOST).to_vector(), (std::vector<float>{7, 0, 0, 7}));
  EXPECT_THROW(Tensor<float>({3}, {IDENTITY}, HOST), ShapeError);
  EXPECT_THROW(Tensor<float>({3, 3}, {DIAGONAL, {1, 2}}, HOST), ValueError);
  EXPECT_EQ(float(Tensor<half>({2}, {CONSTANT, 0.5f}, HOST).get(1)), 0.5f);
}

TEST(Fill, UniformStatistics) {
  Tensor<float> t({200000}, {UNIFORM, {-1.0f, 3.0f}}, HOST);
  const Stats s = stats(t);
  EXPECT_NEAR(s.mean, 1.0, 0.02);
  EXPECT_NEAR(s.var, 16.0 / 12.0, 0.02);
  EXPECT_GE(s.min, -1.0);
  EXPECT_LT(s.max, 3.0);
}

TEST(Fill, GaussianStatistics) {
  Tensor<double> t({200000}, {GAUSSIAN, {2.0, 0.5}}, MANAGED);
  const Stats s = stats(t);
  EXPECT_NEAR(s.mean, 2.0, 0.01);
  EXPECT_NEAR(std::sqrt(s.var), 0.5, 0.01);
}

TEST(Fill, GlorotAndHeScaleWithFans) {
  // {out, in} = {300, 500}: Glorot limit sqrt(6 / 800); He std sqrt(2 / 500).
  Tensor<float> g({300, 500}, {GLOROT}, HOST);
  const Stats sg = stats(g);
  const double a = std::sqrt(6.0 / 800.0);
  EXPECT_LE(sg.max, a);
  EXPECT_GE(sg.min, -a);
  EXPECT_NEAR(sg.var, a * a / 3.0, 0.03 * a * a);
  Tensor<float> h({300, 500}, {HE}, HOST);
  EXPECT_NEAR(std::sqrt(stats(h).var), std::sqrt(2.0 / 500.0), 0.002);
  // Convolution weights {out, in, kh, kw}: fan_in = in * kh * kw.
  Tensor<float> c({64, 32, 3, 3}, {HE}, HOST);
  EXPECT_NEAR(std::sqrt(stats(c).var), std::sqrt(2.0 / (32 * 9)), 0.003);
}

TEST(Fill, MaskProbability) {
  Tensor<float> m({100000}, {MASK, {0.3f}}, HOST);
  const Stats s = stats(m);
  EXPECT_NEAR(s.mean, 0.3, 0.01);
  EXPECT_EQ(s.min, 0.0);
  EXPECT_EQ(s.max, 1.0);
}

TEST(Fill, SeededRepeatabilityAndDistinctTensors) {
  set_seed(1234);
  Tensor<float> a({1000}, {UNIFORM}, HOST);
  Tensor<float> b({1000}, {UNIFORM}, HOST);
  set_seed(1234);
  Tensor<float> a2({1000}, {UNIFORM}, HOST);
  Tensor<float> b2({1000}, {GAUSSIAN}, HOST);
  EXPECT_EQ(a.to_vector(), a2.to_vector());
  EXPECT_NE(a.to_vector(), b.to_vector());  // two tensors never share values
  set_seed(99);
  Tensor<float> c({1000}, {UNIFORM}, HOST);
  EXPECT_NE(a.to_vector(), c.to_vector());
  // The same seed gives the same draws in another memory type.
  const auto av = a.to_vector();
  set_seed(1234);
  Tensor<float> am({1000}, {UNIFORM}, MANAGED);
  EXPECT_EQ(am.to_vector(), av);
}
