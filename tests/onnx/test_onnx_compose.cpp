// The operators the importer composes from magmadnn's ops (compose.h):
// gradchecked in double, their values checked against direct loops, and
// the free batch axis left free. (Their float forms are checked against
// ONNX's reference outputs by the node tests, test_onnx_conformance.cpp.)
#include <gtest/gtest.h>

#include <cmath>

#include "magmadnn/onnx/compose.h"
#include "support/gradcheck.h"

using namespace magmadnn;
using magmadnn::onnx::compose::Reduce;
using magmadnn::testing::gradcheck;
using magmadnn::testing::random_tensor;
using V = std::vector<op::Var<double>>;
using Dims = std::vector<std::int64_t>;

namespace {

const Reduce kAll[] = {Reduce::Sum, Reduce::Mean, Reduce::Max, Reduce::Min, Reduce::L1,
                       Reduce::L2, Reduce::SumSquare, Reduce::LogSum, Reduce::LogSumExp};

// Reduce `kind` of the values v (a direct loop, the definition).
double direct(Reduce kind, const std::vector<double>& v) {
  double s = 0, mx = -INFINITY, mn = INFINITY;
  for (double x : v) {
    mx = std::max(mx, x), mn = std::min(mn, x);
    switch (kind) {
      case Reduce::L1: s += std::abs(x); break;
      case Reduce::L2: case Reduce::SumSquare: s += x * x; break;
      case Reduce::LogSumExp: s += std::exp(x); break;
      default: s += x; break;
    }
  }
  switch (kind) {
    case Reduce::Mean: return s / static_cast<double>(v.size());
    case Reduce::Max: return mx;
    case Reduce::Min: return mn;
    case Reduce::L2: return std::sqrt(s);
    case Reduce::LogSum: case Reduce::LogSumExp: return std::log(s);
    default: return s;
  }
}

}  // namespace

TEST(OnnxCompose, ReductionsGradcheckInDouble) {
  const Tensor<double> x = random_tensor<double>({2, 3, 4}, 3, 0.1, 2.0);  // positive for LogSum
  for (Reduce k : kAll) {
    for (const Dims& axes : {Dims{1}, Dims{0, 2}, Dims{}}) {
      for (bool keep : {true, false}) {
        EXPECT_TRUE(gradcheck<double>([&](const V& v) { return onnx::compose::reduce<double>(k, v[0], axes, keep, false); },
                                      {x}))
            << "kind " << static_cast<int>(k) << " axes " << axes.size() << " keepdims " << keep;
      }
    }
  }
}

TEST(OnnxCompose, ReductionValuesAndShapes) {
  const Tensor<double> x = random_tensor<double>({2, 3, 4}, 5, -1.0, 1.0);
  auto v = op::var<double>("x", x.shape(), {NONE}, HOST);
  v->set_value(x);
  for (Reduce k : kAll) {
    if (k == Reduce::LogSum) continue;  // needs positive sums
    const auto y = onnx::compose::reduce<double>(k, v, {1}, false, false);
    const Tensor<double>& r = *y->eval();
    ASSERT_EQ(r.shape(), Shape({2, 4}));
    for (std::int64_t a = 0; a < 2; ++a) {
      for (std::int64_t c = 0; c < 4; ++c) {
        std::vector<double> col;
        for (std::int64_t b = 0; b < 3; ++b) col.push_back(x.get((a * 3 + b) * 4 + c));
        EXPECT_NEAR(r.get(a * 4 + c), direct(k, col), 1e-12) << "kind " << static_cast<int>(k);
      }
    }
    EXPECT_EQ(onnx::compose::reduce<double>(k, v, {0, 2}, true, false)->eval()->shape(), Shape({1, 3, 1}));
    EXPECT_EQ(onnx::compose::reduce<double>(k, v, {}, false, false)->eval()->shape(), Shape({1}));
  }
}

TEST(OnnxCompose, TheFreeBatchAxisStaysFree) {
  auto v = op::placeholder<double>("x", {-1, 3, 4}, HOST);
  v->set_value(random_tensor<double>({2, 3, 4}, 8));
  const auto y = onnx::compose::reduce<double>(Reduce::Max, v, {2}, false, true);
  v->set_value(random_tensor<double>({5, 3, 4}, 9));  // another batch size after the graph was built
  EXPECT_EQ(y->eval()->shape(), Shape({5, 3}));
  EXPECT_THROW(onnx::compose::reduce<double>(Reduce::Max, v, {0}, false, true), NotSupportedError);
}

TEST(OnnxCompose, LayerNormGradcheckInDouble) {
  const Tensor<double> x = random_tensor<double>({2, 3, 4}, 7);
  for (std::int64_t axis : {0, 1, 2}) {
    const Dims all{2, 3, 4}, tail(all.begin() + axis, all.end());
    const Tensor<double> scale = random_tensor<double>(Shape(tail), 8, 0.5, 1.5);
    const Tensor<double> bias = random_tensor<double>(Shape(tail), 9);
    for (int out = 0; out < 3; ++out) {
      EXPECT_TRUE(gradcheck<double>(
          [&](const V& v) { return onnx::compose::layer_norm<double>(v[0], v[1], v[2], axis, 1e-5, false)[out]; },
          {x, scale, bias}))
          << "axis " << axis << " output " << out;
    }
  }
}

TEST(OnnxCompose, LayerNormValues) {
  const Tensor<double> x = random_tensor<double>({2, 6}, 11);
  auto v = op::var<double>("x", x.shape(), {NONE}, HOST);
  v->set_value(x);
  auto one = op::constant<double>("one", Tensor<double>::from_vector(Shape{1}, std::vector<double>{1.0}, HOST));
  const auto ys = onnx::compose::layer_norm<double>(v, one, op::Expr<double>(), 1, 0.0, false);
  for (std::int64_t r = 0; r < 2; ++r) {
    double mean = 0, sq = 0;
    for (std::int64_t c = 0; c < 6; ++c) mean += x.get(r * 6 + c) / 6;
    for (std::int64_t c = 0; c < 6; ++c) sq += (x.get(r * 6 + c) - mean) * (x.get(r * 6 + c) - mean) / 6;
    EXPECT_NEAR(ys[1]->eval()->get(r), mean, 1e-12);
    EXPECT_NEAR(ys[2]->eval()->get(r), 1 / std::sqrt(sq), 1e-9);
    for (std::int64_t c = 0; c < 6; ++c) {
      EXPECT_NEAR(ys[0]->eval()->get(r * 6 + c), (x.get(r * 6 + c) - mean) / std::sqrt(sq), 1e-9);
    }
  }
}
