// Pooling: hand-computed values, gradcheck in double, argmax bookkeeping.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "magmadnn/conv/conv.h"
#include "magmadnn/conv/pool_chooser.h"
#include "support/gradcheck.h"

using namespace magmadnn;
using magmadnn::testing::gradcheck;
using magmadnn::testing::random_tensor;

namespace {
using V = std::vector<op::Var<double>>;
conv::PoolParams pool(std::int64_t k, std::int64_t stride, std::int64_t pad, conv::PoolMode mode,
                      bool include_pad = false) {
  conv::PoolParams p;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  p.mode = mode;
  p.count_include_pad = include_pad;
  return p;
}
}  // namespace

TEST(Pooling, HandComputedMaxAndAverage) {
  // 1 2 3 4 / 5 6 7 8 / 9 10 11 12 / 13 14 15 16
  std::vector<double> v(16);
  for (int i = 0; i < 16; ++i) v[i] = i + 1;
  auto x = Tensor<double>::from_vector({1, 1, 4, 4}, v, HOST);
  Tensor<std::int32_t> am;
  EXPECT_EQ(conv::pool2d_forward(x, pool(2, 2, 0, MAX_POOL), &am).to_vector(), (std::vector<double>{6, 8, 14, 16}));
  EXPECT_EQ(am.to_vector(), (std::vector<std::int32_t>{5, 7, 13, 15}));
  EXPECT_EQ(conv::pool2d_forward(x, pool(2, 2, 0, AVERAGE_POOL)).to_vector(),
            (std::vector<double>{3.5, 5.5, 11.5, 13.5}));
  // 3x3 windows, stride 2, pad 1: the corner window sees {1, 2, 5, 6}.
  auto valid = conv::pool2d_forward(x, pool(3, 2, 1, AVERAGE_POOL, false)).to_vector();
  auto incl = conv::pool2d_forward(x, pool(3, 2, 1, AVERAGE_POOL, true)).to_vector();
  EXPECT_DOUBLE_EQ(valid[0], 14.0 / 4);
  EXPECT_DOUBLE_EQ(incl[0], 14.0 / 9);
  // Max backward sends each gradient to its maximum only.
  auto dy = Tensor<double>::from_vector({1, 1, 2, 2}, {1, 2, 3, 4}, HOST);
  auto dx = conv::pool2d_backward(x, dy, pool(2, 2, 0, MAX_POOL), &am).to_vector();
  std::vector<double> want(16, 0.0);
  want[5] = 1, want[7] = 2, want[13] = 3, want[15] = 4;
  EXPECT_EQ(dx, want);
  EXPECT_EQ(conv::pool2d_backward(x, dy, pool(2, 2, 0, MAX_POOL), nullptr).to_vector(), want);
}

TEST(Pooling, GradcheckMaxAndAverage) {
  auto x = random_tensor<double>({2, 3, 7, 6}, 21);  // distinct values: no ties
  for (auto p : {pool(2, 2, 0, MAX_POOL), pool(3, 2, 1, MAX_POOL), pool(3, 1, 1, MAX_POOL),
                 pool(2, 2, 0, AVERAGE_POOL), pool(3, 2, 1, AVERAGE_POOL, false),
                 pool(3, 2, 1, AVERAGE_POOL, true), pool(3, 1, 0, AVERAGE_POOL)}) {
    EXPECT_TRUE(gradcheck<double>([&](const V& v) { return op::pooling(v[0], p); }, {x}))
        << "kernel " << p.kernel_h << " stride " << p.stride_h << " pad " << p.pad_h;
  }
}

TEST(Pooling, ShapeErrors) {
  auto x = random_tensor<double>({1, 1, 4, 4}, 22);
  EXPECT_THROW(conv::pool2d_forward(x, pool(5, 1, 0, MAX_POOL)), ShapeError);
  EXPECT_THROW(conv::pool2d_forward(x, pool(2, 2, 2, MAX_POOL)), ShapeError);  // pad >= window
  auto x3 = random_tensor<double>({4, 4, 4}, 23);
  EXPECT_THROW(conv::pool2d_forward(x3, pool(2, 2, 0, MAX_POOL)), ShapeError);
  auto dy = random_tensor<double>({1, 1, 3, 3}, 24);
  EXPECT_THROW(conv::pool2d_backward(x, dy, pool(2, 2, 0, MAX_POOL)), ShapeError);
}

// 2x2 max windows with stride 2 take a vectorised path of their own
// (pool_cpu.cpp). Against a reference written here: odd sizes (a last row
// and column in no window), many ties (values from {0, 1, 2}: the first
// maximum in row-major order wins, as in the general path), a NaN at a
// window's start (kept, as in the general path) and elsewhere (skipped).
template <typename T>
void check_max2x2(std::int64_t h, std::int64_t w) {
  const std::int64_t planes = 3, oh = h / 2, ow = w / 2;
  std::vector<T> xv(static_cast<std::size_t>(planes * h * w));
  std::uint64_t s = 99;
  for (auto& v : xv) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<T>((s >> 33) % 3);
  }
  xv[0] = std::numeric_limits<T>::quiet_NaN();  // the first window's first element
  xv[static_cast<std::size_t>(h * w + 1)] = std::numeric_limits<T>::quiet_NaN();  // plane 1, second element
  auto x = Tensor<T>::from_vector({1, planes, h, w}, xv, HOST);
  Tensor<std::int32_t> am;
  const auto y = conv::pool2d_forward(x, pool(2, 2, 0, MAX_POOL), &am).to_vector();
  const auto at = am.to_vector();
  std::vector<T> dyv(static_cast<std::size_t>(planes * oh * ow));
  for (std::size_t i = 0; i < dyv.size(); ++i) dyv[i] = static_cast<T>(i + 1);
  auto dy = Tensor<T>::from_vector({1, planes, oh, ow}, dyv, HOST);
  const auto dx = conv::pool2d_backward(x, dy, pool(2, 2, 0, MAX_POOL), &am).to_vector();
  std::vector<T> want_dx(xv.size(), T(0));
  for (std::int64_t pl = 0; pl < planes; ++pl)
    for (std::int64_t i = 0; i < oh; ++i)
      for (std::int64_t j = 0; j < ow; ++j) {
        const std::int64_t o = (pl * oh + i) * ow + j;
        std::int64_t best = 2 * i * w + 2 * j;
        for (std::int64_t k : {2 * i * w + 2 * j + 1, (2 * i + 1) * w + 2 * j, (2 * i + 1) * w + 2 * j + 1})
          if (xv[static_cast<std::size_t>(pl * h * w + k)] > xv[static_cast<std::size_t>(pl * h * w + best)]) best = k;
        ASSERT_EQ(at[static_cast<std::size_t>(o)], best) << "plane " << pl << " window " << i << "," << j;
        const T want = xv[static_cast<std::size_t>(pl * h * w + best)];
        if (std::isnan(want)) EXPECT_TRUE(std::isnan(y[static_cast<std::size_t>(o)]));
        else EXPECT_EQ(y[static_cast<std::size_t>(o)], want);
        want_dx[static_cast<std::size_t>(pl * h * w + best)] = dyv[static_cast<std::size_t>(o)];
      }
  EXPECT_EQ(dx, want_dx);
  // Without the recorded maxima the gradient is found again from x.
  EXPECT_EQ(conv::pool2d_backward(x, dy, pool(2, 2, 0, MAX_POOL), nullptr).to_vector(), want_dx);
}

TEST(Pooling, Max2x2StrideTwoMatchesAReferenceWithTiesNansAndOddSizes) {
  conv::set_forced_pool_impl("cpu");  // oneDNN's pooling may win the timing for float
  check_max2x2<float>(7, 9);
  check_max2x2<float>(28, 28);
  check_max2x2<double>(5, 4);
  check_max2x2<double>(2, 33);
  conv::set_forced_pool_impl("");
}
