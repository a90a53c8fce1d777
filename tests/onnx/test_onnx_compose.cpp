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
                       Reduce::L2, Reduce::SumSquare, Reduce::LogSum, Reduce::LogSumExp, Reduce::Prod};

// Reduce `kind` of the values v (a direct loop, the definition).
double direct(Reduce kind, const std::vector<double>& v) {
  double s = 0, mx = -INFINITY, mn = INFINITY, prod = 1;
  for (double x : v) {
    mx = std::max(mx, x), mn = std::min(mn, x), prod *= x;
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
    case Reduce::Prod: return prod;
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

TEST(OnnxCompose, ElementwiseGradcheckInDouble) {
  namespace c = onnx::compose;
  // Away from the kinks at 0 (and at -2.5 and 2.5 for HardSigmoid 0.2 x + 0.5).
  std::vector<double> vals;
  for (int i = 0; i < 12; ++i) vals.push_back((i % 2 ? 1 : -1) * (0.2 + 0.4 * i));
  const Tensor<double> x = Tensor<double>::from_vector(Shape{3, 4}, vals, HOST);
  const Tensor<double> slope = random_tensor<double>({4}, 3, 0.1, 0.5), lo = random_tensor<double>({1}, 4, -1.5, -1.3);
  const Tensor<double> hi = random_tensor<double>({3, 1}, 5, 1.3, 1.5);
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return c::elu<double>(v[0], 1.3); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return c::celu<double>(v[0], 0.7); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return c::hard_sigmoid<double>(v[0], 0.2, 0.5); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return c::softsign<double>(v[0]); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return c::prelu<double>(v[0], v[1]); }, {x, slope}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return c::sinh_cosh<double>(v[0], false); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return c::sinh_cosh<double>(v[0], true); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return c::clip<double>(v[0], v[1], v[2]); }, {x, lo, hi}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return c::trilu<double>(v[0], 1, false); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return c::trilu<double>(v[0], -1, true); }, {x}));
}

TEST(OnnxCompose, ElementwiseValues) {
  namespace c = onnx::compose;
  const std::vector<double> vals{-3.0, -0.5, 0.25, 4.0};
  auto v = op::var<double>("x", Shape{2, 2}, {NONE}, HOST);
  v->set_value(Tensor<double>::from_vector(Shape{2, 2}, vals, HOST));
  const auto at = [](const op::Expr<double>& y, std::int64_t i) { return y->eval()->get(i); };
  for (std::int64_t i = 0; i < 4; ++i) {
    const double x = vals[static_cast<std::size_t>(i)];
    EXPECT_NEAR(at(c::elu<double>(v, 1.3), i), x > 0 ? x : 1.3 * (std::exp(x) - 1), 1e-12);
    EXPECT_NEAR(at(c::celu<double>(v, 0.7), i), std::max(0.0, x) + std::min(0.0, 0.7 * (std::exp(x / 0.7) - 1)), 1e-12);
    EXPECT_NEAR(at(c::hard_sigmoid<double>(v, 0.2, 0.5), i), std::clamp(0.2 * x + 0.5, 0.0, 1.0), 1e-12);
    EXPECT_NEAR(at(c::softsign<double>(v), i), x / (1 + std::abs(x)), 1e-12);
    EXPECT_NEAR(at(c::sinh_cosh<double>(v, false), i), std::sinh(x), 1e-12);
    EXPECT_NEAR(at(c::sinh_cosh<double>(v, true), i), std::cosh(x), 1e-12);
  }
  // tril (k 0) of [[-3, -0.5], [0.25, 4]] zeroes -0.5; triu (k 1) keeps only it.
  EXPECT_EQ(at(c::trilu<double>(v, 0, false), 1), 0.0);
  EXPECT_EQ(at(c::trilu<double>(v, 0, false), 2), 0.25);
  EXPECT_EQ(at(c::trilu<double>(v, 1, true), 1), -0.5);
  EXPECT_EQ(at(c::trilu<double>(v, 1, true), 3), 0.0);
}

namespace {
op::Expr<double> targets(const std::vector<double>& t, const Shape& s) {
  return op::constant<double>("t", Tensor<double>::from_vector(s, t, HOST));
}
}  // namespace

TEST(OnnxCompose, ClassLossesGradcheckInDouble) {
  namespace c = onnx::compose;
  const Tensor<double> x = random_tensor<double>({3, 4, 2}, 12);  // N 3, C 4, d1 2
  const Tensor<double> w = random_tensor<double>({4}, 13, 0.5, 1.5);
  const std::vector<double> t{0, 3, 2, 2, 1, 3};  // {3, 2}
  for (const char* red : {"none", "sum", "mean"}) {
    for (std::optional<std::int64_t> ii : {std::optional<std::int64_t>{}, std::optional<std::int64_t>{2}}) {
      EXPECT_TRUE(gradcheck<double>(
          [&](const V& v) { return c::nll_loss<double>(v[0], targets(t, {3, 2}), v[1], ii, red, false); }, {x, w}))
          << red;
      EXPECT_TRUE(gradcheck<double>(
          [&](const V& v) {
            return c::nll_loss<double>(c::log_softmax_axis<double>(v[0], 1), targets(t, {3, 2}), op::Expr<double>(),
                                       ii, red, false);
          },
          {x}))
          << red;
    }
  }
}

TEST(OnnxCompose, ClassLossValues) {
  namespace c = onnx::compose;
  // x {2, 3}: rows of log-probabilities; targets 2 and 0; weights 1, 2, 3.
  auto x = op::constant<double>("x", Tensor<double>::from_vector(Shape{2, 3}, std::vector<double>{-1, -2, -3, -4, -5, -6}, HOST));
  auto w = op::constant<double>("w", Tensor<double>::from_vector(Shape{3}, std::vector<double>{1, 2, 3}, HOST));
  const auto t = targets({2, 0}, {2});
  const auto none = c::nll_loss<double>(x, t, w, std::nullopt, "none", false);
  EXPECT_EQ(none->eval()->shape(), Shape({2}));
  EXPECT_DOUBLE_EQ(none->eval()->get(0), 9.0);  // -(-3) * 3
  EXPECT_DOUBLE_EQ(none->eval()->get(1), 4.0);  // -(-4) * 1
  EXPECT_DOUBLE_EQ(c::nll_loss<double>(x, t, w, std::nullopt, "mean", false)->eval()->get(0), 13.0 / 4.0);
  EXPECT_DOUBLE_EQ(c::nll_loss<double>(x, t, w, 2, "sum", false)->eval()->get(0), 4.0);  // target 2 ignored
  EXPECT_DOUBLE_EQ(c::nll_loss<double>(x, t, w, -1, "mean", false)->eval()->get(0), 13.0 / 4.0);
  // one_hot: an index outside 0..C-1 gives a row of zeros.
  const auto oh = c::one_hot<double>(targets({1, 5}, {2}), 3, false);
  const std::vector<double> want{0, 1, 0, 0, 0, 0};
  for (std::int64_t i = 0; i < 6; ++i) EXPECT_EQ(oh->eval()->get(i), want[static_cast<std::size_t>(i)]);
}

TEST(OnnxCompose, LayoutAndNormalizationGradcheckInDouble) {
  namespace c = onnx::compose;
  const Tensor<double> x = random_tensor<double>({2, 8, 2, 3}, 14);
  for (bool crd : {false, true}) {
    EXPECT_TRUE(gradcheck<double>([crd](const V& v) { return c::depth_to_space<double>(v[0], 2, crd, false); }, {x}));
  }
  const Tensor<double> s = random_tensor<double>({2, 2, 4, 6}, 15);
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return c::space_to_depth<double>(v[0], 2, false); }, {s}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return c::mean_variance_norm<double>(v[0], {0, 2, 3}, false); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return c::lrn<double>(v[0], 3, 0.3, 0.75, 1.0, false); }, {x}));
}

TEST(OnnxCompose, LayoutValues) {
  namespace c = onnx::compose;
  // SpaceToDepth then DepthToSpace (DCR) gives the input back; one element
  // of SpaceToDepth by hand: y[0][(bh * 2 + bw) * C + ch][h][w] = x[0][ch][2h + bh][2w + bw].
  const Tensor<double> x = random_tensor<double>({1, 2, 4, 6}, 16);
  auto v = op::var<double>("x", x.shape(), {NONE}, HOST);
  v->set_value(x);
  const auto y = c::space_to_depth<double>(v, 2, false);
  ASSERT_EQ(y->eval()->shape(), Shape({1, 8, 2, 3}));
  EXPECT_EQ(y->eval()->get((((1 * 2 + 0) * 2 + 1) * 2 + 1) * 3 + 2), x.get((1 * 4 + 2 * 1 + 1) * 6 + 2 * 2 + 0));
  const auto back = c::depth_to_space<double>(y, 2, false, false);
  for (std::int64_t i = 0; i < x.size(); ++i) EXPECT_EQ(back->eval()->get(i), x.get(i));
  // LRN of one channel column: x / (bias + alpha / size * sum of the squares in the window)^beta.
  const auto l = c::lrn<double>(v, 3, 0.3, 0.75, 1.0, false);
  const double x0 = x.get(0), x1 = x.get(24);  // channels 0 and 1 at (0, 0)
  EXPECT_NEAR(l->eval()->get(0), x0 / std::pow(1.0 + 0.3 / 3 * (x0 * x0 + x1 * x1), 0.75), 1e-12);
}

TEST(OnnxCompose, StepAndHardmax) {
  namespace c = onnx::compose;
  const std::vector<double> vals{-2.0, 0.0, 3.0, INFINITY, -INFINITY, 0.5};
  auto v = op::var<double>("x", Shape{2, 3}, {NONE}, HOST);
  v->set_value(Tensor<double>::from_vector(Shape{2, 3}, vals, HOST));
  const auto s = c::step<double>(v, false);
  ASSERT_EQ(s->eval()->shape(), Shape({2, 3}));
  const std::vector<double> want{0, 0, 1, 1, 0, 1};  // [x > 0], 0 at 0, right at the infinities
  for (std::int64_t i = 0; i < 6; ++i) EXPECT_EQ(s->eval()->get(i), want[static_cast<std::size_t>(i)]) << i;
  const auto h = c::hardmax<double>(v, 1);
  const std::vector<double> hw{0, 0, 1, 1, 0, 0};
  for (std::int64_t i = 0; i < 6; ++i) EXPECT_EQ(h->eval()->get(i), hw[static_cast<std::size_t>(i)]) << i;
  // Both piecewise constant: zero gradients; x * step(x - 0.5) has the gradient step.
  const Tensor<double> x = random_tensor<double>({3, 4}, 30);
  EXPECT_TRUE(gradcheck<double>([](const V& w) { return c::step<double>(w[0], false); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& w) { return c::hardmax<double>(w[0], 0); }, {x}));
  EXPECT_TRUE(gradcheck<double>(
      [](const V& w) { return op::product(w[0], c::step<double>(op::add_scalar(w[0], -0.5), false)); }, {x}));
}

TEST(OnnxCompose, GathersGradcheckValuesAndAFreeBatch) {
  namespace c = onnx::compose;
  const Tensor<double> x = random_tensor<double>({3, 4}, 31);
  const auto idx = targets({2, 0, -1, 1, 1, 3}, {3, 2});  // GatherElements along axis 1 of {3, 4}
  EXPECT_TRUE(gradcheck<double>([&](const V& v) { return c::gather_elements<double>(v[0], idx, 1, false); }, {x}));
  const auto rows = targets({2, -3, 1}, {3});  // Gather along axis 0 (rows 2, 0, 1) and axis 1 (columns 2, 1, 1)
  EXPECT_TRUE(gradcheck<double>([&](const V& v) { return c::gather_rows<double>(v[0], rows, 0, false); }, {x}));
  EXPECT_TRUE(gradcheck<double>([&](const V& v) { return c::gather_rows<double>(v[0], rows, 1, false); }, {x}));
  auto v = op::var<double>("x", x.shape(), {NONE}, HOST);
  v->set_value(x);
  const auto ge = c::gather_elements<double>(v, idx, 1, false);
  const auto g1 = c::gather_rows<double>(v, rows, 1, false);
  ASSERT_EQ(g1->eval()->shape(), Shape({3, 3}));
  for (std::int64_t r = 0; r < 3; ++r) {
    EXPECT_EQ(ge->eval()->get(r * 2), x.get(r * 4 + std::vector<std::int64_t>{2, 3, 1}[static_cast<std::size_t>(r)]));
    EXPECT_EQ(g1->eval()->get(r * 3 + 1), x.get(r * 4 + 1));  // index -3 of 4 columns: column 1
  }
  // An embedding: token ids {N, 2} with N free, a table {5, 3}.
  auto ids = op::placeholder<double>("ids", {-1, 2}, HOST);
  ids->set_value(Tensor<double>::from_vector(Shape{1, 2}, std::vector<double>{0, 4}, HOST));
  const auto table = op::constant<double>("table", random_tensor<double>({5, 3}, 32));
  const auto emb = c::gather_rows<double>(table, ids, 0, true);
  ids->set_value(Tensor<double>::from_vector(Shape{3, 2}, std::vector<double>{0, 4, 1, 1, 3, 2}, HOST));
  ASSERT_EQ(emb->eval()->shape(), Shape({3, 2, 3}));
  EXPECT_EQ(emb->eval()->get((2 * 2 + 1) * 3 + 2), table->eval()->get(2 * 3 + 2));  // ids[2][1] = 2
}

TEST(OnnxCompose, ProductOverAnAxisWithZerosAndOddLengths) {
  // Odd and even extents (1, 5, 4), and a zero: the gradient of the others
  // is the product rule's, not 0 / 0.
  Tensor<double> x = random_tensor<double>({1, 5, 4}, 41, 0.5, 1.5);
  x.set(6, 0.0);
  for (const Dims& axes : {Dims{0}, Dims{1}, Dims{2}, Dims{}}) {
    EXPECT_TRUE(gradcheck<double>(
        [&](const V& v) { return onnx::compose::reduce<double>(Reduce::Prod, v[0], axes, true, false); }, {x}))
        << "axes " << axes.size();
  }
  auto v = op::var<double>("x", x.shape(), {NONE}, HOST);
  v->set_value(x);
  const auto y = onnx::compose::reduce<double>(Reduce::Prod, v, {1}, false, false);
  ASSERT_EQ(y->eval()->shape(), Shape({1, 4}));
  EXPECT_EQ(y->eval()->get(2), 0.0);  // column 2 holds the zero (element 6 = row 1, column 2)
  double p = 1;
  for (std::int64_t r = 0; r < 5; ++r) p *= x.get(r * 4 + 3);
  EXPECT_NEAR(y->eval()->get(3), p, 1e-12);
  auto b = op::placeholder<double>("b", {-1, 3}, HOST);
  b->set_value(random_tensor<double>({2, 3}, 42));
  EXPECT_THROW(onnx::compose::reduce<double>(Reduce::Prod, b, {0}, false, true), NotSupportedError);
}

TEST(OnnxCompose, WhereAndCumSumGradcheckAndValues) {
  namespace c = onnx::compose;
  const Tensor<double> x = random_tensor<double>({3, 4}, 51), y = random_tensor<double>({4}, 52);
  const auto cond = targets({1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 0}, {3, 4});
  EXPECT_TRUE(gradcheck<double>([&](const V& v) { return c::where<double>(cond, v[0], v[1]); }, {x, y}));
  for (std::int64_t axis : {0, 1}) {
    for (int mode = 0; mode < 4; ++mode) {
      EXPECT_TRUE(gradcheck<double>([&](const V& v) { return c::cumsum<double>(v[0], axis, mode & 1, mode & 2, false); },
                                    {x}))
          << "axis " << axis << " mode " << mode;
    }
  }
  auto vx = op::var<double>("x", x.shape(), {NONE}, HOST);
  vx->set_value(x);
  auto vy = op::var<double>("y", y.shape(), {NONE}, HOST);
  vy->set_value(y);
  const auto we = c::where<double>(cond, vx, vy);
  const Tensor<double>& w = *we->eval();
  for (std::int64_t k = 0; k < 12; ++k) EXPECT_EQ(w.get(k), cond->eval()->get(k) != 0 ? x.get(k) : y.get(k % 4));
  // Along axis 0 of {3, 4}: inclusive, exclusive, reverse, reverse exclusive.
  for (int mode = 0; mode < 4; ++mode) {
    const bool exclusive = mode & 1, reverse = mode & 2;
    const auto se = c::cumsum<double>(vx, 0, exclusive, reverse, false);
    const Tensor<double>& s = *se->eval();
    ASSERT_EQ(s.shape(), Shape({3, 4}));
    for (std::int64_t i = 0; i < 3; ++i) {
      for (std::int64_t col = 0; col < 4; ++col) {
        double want = 0;
        for (std::int64_t j = 0; j < 3; ++j) {
          if (reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i)) want += x.get(j * 4 + col);
        }
        EXPECT_NEAR(s.get(i * 4 + col), want, 1e-12) << "mode " << mode;
      }
    }
  }
  // An axis read at run time (1, -1, 0 of rank 2): cumsum's values and gradient.
  for (double axis : {1.0, -1.0, 0.0}) {
    const auto ax = targets({axis}, {1});
    EXPECT_TRUE(gradcheck<double>([&](const V& v) { return c::cumsum_any_axis<double>(v[0], ax, true, false); }, {x}));
    const auto any = c::cumsum_any_axis<double>(vx, ax, true, false);
    const auto fixed = c::cumsum<double>(vx, axis == 0.0 ? 0 : 1, true, false, false);
    for (std::int64_t k = 0; k < 12; ++k) EXPECT_EQ(any->eval()->get(k), fixed->eval()->get(k)) << "axis " << axis;
  }
  // A free batch axis stays free; CumSum along it is refused.
  auto b = op::placeholder<double>("b", {-1, 4}, HOST);
  b->set_value(random_tensor<double>({2, 4}, 53));
  const auto cs = c::cumsum<double>(b, 1, false, false, true);
  b->set_value(random_tensor<double>({5, 4}, 54));
  EXPECT_EQ(cs->eval()->shape(), Shape({5, 4}));
  EXPECT_THROW(c::cumsum<double>(b, 0, false, false, true), NotSupportedError);
}

// Mod of integers held as float and as double, both signs, both modes,
// against std::fmod and the floor form; a b of shape {1} broadcast; values
// near the exact range's end (2^22 in float).
TEST(OnnxCompose, ModOfIntegersIsExact) {
  std::vector<double> as, bs;
  for (int a = -9; a <= 9; ++a) {
    for (int b : {-4, -3, -1, 1, 2, 5}) as.push_back(a), bs.push_back(b);
  }
  for (double big : {4194303.0, -4194303.0, 4194301.0}) as.push_back(big), bs.push_back(7);
  const Shape s{static_cast<std::int64_t>(as.size())};
  for (bool fmod : {false, true}) {
    const auto yd = onnx::compose::mod<double>(targets(as, s), targets(bs, s), fmod, false);
    const auto af = op::constant<float>("a", Tensor<float>::from_vector(s, std::vector<float>(as.begin(), as.end()), HOST));
    const auto bf = op::constant<float>("b", Tensor<float>::from_vector(s, std::vector<float>(bs.begin(), bs.end()), HOST));
    const auto yf = onnx::compose::mod<float>(af, bf, fmod, false);
    for (std::size_t k = 0; k < as.size(); ++k) {
      const double want = fmod ? std::fmod(as[k], bs[k]) : as[k] - bs[k] * std::floor(as[k] / bs[k]);
      const auto i = static_cast<std::int64_t>(k);
      EXPECT_EQ(yd->eval()->get(i), want) << as[k] << " mod " << bs[k] << " fmod " << fmod;
      EXPECT_EQ(yf->eval()->get(i), static_cast<float>(want)) << as[k] << " mod " << bs[k] << " fmod " << fmod;
    }
  }
  const auto y = onnx::compose::mod<double>(targets({7, -7, 8}, {3}), targets({-3}, {1}), false, false);
  EXPECT_EQ(y->eval()->get(0), -2.0);
  EXPECT_EQ(y->eval()->get(1), -1.0);
  EXPECT_EQ(y->eval()->get(2), -1.0);
}

// Mod of real numbers: the gradient is Mod's (1 for a, -floor(a / b) or
// -trunc(a / b) for b; gradchecked in double away from the jumps), values
// against std::fmod and the floor form, in float too where a / b rounds up
// to an integer (174.8963f / 5.144009f rounds to 34; the remainder is
// 5.1440005, not about 0).
TEST(OnnxCompose, ModOfRealsGradcheckAndValues) {
  const Tensor<double> a = random_tensor<double>({3, 4}, 71, -9.0, 9.0);
  const Tensor<double> b = Tensor<double>::from_vector(Shape{4}, std::vector<double>{-2.3, -0.7, 1.1, 3.9}, HOST);
  for (bool fmod : {false, true}) {
    EXPECT_TRUE(gradcheck<double>([&](const V& v) { return onnx::compose::mod<double>(v[0], v[1], fmod, false); }, {a, b}))
        << "fmod " << fmod;
    auto va = op::var<double>("a", a.shape(), {NONE}, HOST);
    va->set_value(a);
    auto vb = op::var<double>("b", b.shape(), {NONE}, HOST);
    vb->set_value(b);
    const auto y = onnx::compose::mod<double>(va, vb, fmod, false);
    for (std::int64_t k = 0; k < 12; ++k) {
      const double x = a.get(k), d = b.get(k % 4);
      EXPECT_NEAR(y->eval()->get(k), fmod ? std::fmod(x, d) : x - d * std::floor(x / d), 1e-12) << x << " mod " << d;
    }
  }
  const float x = 174.8963f, d = 5.144009f;
  ASSERT_EQ(x / d, 34.0f);  // the quotient rounds up to an integer
  const auto xs = op::constant<float>("x", Tensor<float>::from_vector(Shape{2}, std::vector<float>{x, -x}, HOST));
  const auto ds = op::constant<float>("d", Tensor<float>::from_vector(Shape{1}, std::vector<float>{d}, HOST));
  for (bool fmod : {false, true}) {
    const auto y = onnx::compose::mod<float>(xs, ds, fmod, false);
    EXPECT_NEAR(y->eval()->get(0), std::fmod(x, d), 1e-5);
    EXPECT_NEAR(y->eval()->get(1), fmod ? std::fmod(-x, d) : d - std::fmod(x, d), 1e-5);
  }
}

// GatherND: tuples of 2 and of 1 index (negative ones wrapped), one batch
// axis; gradchecked in double and checked against the definition.
TEST(OnnxCompose, GatherNDGradcheckAndValues) {
  namespace c = onnx::compose;
  const Tensor<double> x = random_tensor<double>({2, 3, 4}, 61);
  const auto pairs = targets({1, 2, 0, -1, 1, 0}, {3, 2});   // x[1][2], x[0][2], x[1][0]: {3, 4}
  const auto singles = targets({1, -2}, {2, 1});             // x[1], x[0]: {2, 3, 4}
  const auto batched = targets({2, 0, 1, 1}, {2, 2, 1});     // batch_dims 1: x[0][2], x[0][0], x[1][1], x[1][1]
  EXPECT_TRUE(gradcheck<double>([&](const V& v) { return c::gather_nd<double>(v[0], pairs, 0); }, {x}));
  EXPECT_TRUE(gradcheck<double>([&](const V& v) { return c::gather_nd<double>(v[0], singles, 0); }, {x}));
  EXPECT_TRUE(gradcheck<double>([&](const V& v) { return c::gather_nd<double>(v[0], batched, 1); }, {x}));
  auto v = op::var<double>("x", x.shape(), {NONE}, HOST);
  v->set_value(x);
  const auto p = c::gather_nd<double>(v, pairs, 0), s = c::gather_nd<double>(v, singles, 0), b = c::gather_nd<double>(v, batched, 1);
  ASSERT_EQ(p->eval()->shape(), Shape({3, 4}));
  ASSERT_EQ(s->eval()->shape(), Shape({2, 3, 4}));
  ASSERT_EQ(b->eval()->shape(), Shape({2, 2, 4}));
  const std::int64_t prow[] = {1 * 3 + 2, 0 * 3 + 2, 1 * 3 + 0}, brow[] = {0 * 3 + 2, 0 * 3 + 0, 1 * 3 + 1, 1 * 3 + 1};
  for (std::int64_t k = 0; k < 4; ++k) {
    for (std::int64_t r = 0; r < 3; ++r) EXPECT_EQ(p->eval()->get(r * 4 + k), x.get(prow[r] * 4 + k));
    for (std::int64_t r = 0; r < 4; ++r) EXPECT_EQ(b->eval()->get(r * 4 + k), x.get(brow[r] * 4 + k));
    EXPECT_EQ(s->eval()->get(k), x.get(12 + k));  // x[1][0][k]
    EXPECT_EQ(s->eval()->get(12 + k), x.get(k));  // x[0][0][k]
  }
  EXPECT_THROW(c::gather_nd<double>(v, targets({0, 0, 0, 0}, {1, 4}), 0), ShapeError);  // 4 indices for rank 3
}
