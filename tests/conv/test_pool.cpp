// Pooling: hand-computed values, gradcheck in double, argmax bookkeeping.
#include <gtest/gtest.h>

#include "magmadnn/conv/conv.h"
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
