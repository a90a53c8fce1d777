// Every differentiable op passes the shared central-difference gradcheck in
// double (and a float spot check), including broadcast patterns and fan-out.
// The unary ops are those of the op table (backend/unary_op_table.h), looped
// over: a new row is checked here without new code.
#include <gtest/gtest.h>

#include "magmadnn/core/random.h"
#include "support/gradcheck.h"
#include "support/op_table.h"

using namespace magmadnn;
using magmadnn::testing::float_options;
using magmadnn::testing::gradcheck;
using magmadnn::testing::op_input;
using magmadnn::testing::op_param;
using magmadnn::testing::random_tensor;
using magmadnn::testing::table_ops;

namespace {
using V = std::vector<op::Var<double>>;
Tensor<double> rnd(const Shape& s, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return random_tensor<double>(s, seed, lo, hi);
}
}  // namespace

// -- binary elementwise, with every broadcast pattern -------------------------------------------
struct BroadcastCase {
  Shape a, b;
};
class BinaryBroadcast : public ::testing::TestWithParam<BroadcastCase> {};

TEST_P(BinaryBroadcast, AddSubProductDiv) {
  const auto& c = GetParam();
  auto a = rnd(c.a, 1), b = rnd(c.b, 2, 0.5, 2.0);  // b away from 0 for div
  EXPECT_TRUE(gradcheck<double>([](const V& x) { return op::add(x[0], x[1]); }, {a, b}));
  EXPECT_TRUE(gradcheck<double>([](const V& x) { return op::sub(x[0], x[1]); }, {a, b}));
  EXPECT_TRUE(gradcheck<double>([](const V& x) { return op::product(x[0], x[1]); }, {a, b}));
  EXPECT_TRUE(gradcheck<double>([](const V& x) { return op::div(x[0], x[1]); }, {a, b}));
  EXPECT_TRUE(gradcheck<double>([](const V& x) { return op::div(x[1], x[0]); }, {rnd(c.a, 3, 0.5, 2.0), b}));
}

INSTANTIATE_TEST_SUITE_P(Patterns, BinaryBroadcast,
                         ::testing::Values(BroadcastCase{{3, 4}, {3, 4}},      // same shape
                                           BroadcastCase{{3, 4}, {4}},         // bias row
                                           BroadcastCase{{3, 4}, {1, 4}},      // row, 2-D
                                           BroadcastCase{{3, 4}, {3, 1}},      // column
                                           BroadcastCase{{3, 4}, {1}},         // scalar
                                           BroadcastCase{{2, 3, 4}, {3, 1}},   // 3-D
                                           BroadcastCase{{2, 1, 4}, {3, 1}}));  // both broadcast

// -- unary: every op of the op table, then the named factories --------------------------------------
class UnaryOpGradcheck : public ::testing::TestWithParam<UnaryOp> {};

TEST_P(UnaryOpGradcheck, MatchesCentralDifferences) {
  const UnaryOpInfo& r = unary_op_info(GetParam());
  Tensor<double> x = rnd({3, 5}, 4, 0.0, 1.0);
  for (std::int64_t i = 0; i < x.size(); ++i) x.set(i, op_input(r.domain, x.get(i), 0.1, 2.0));
  const double p = op_param(r);
  EXPECT_TRUE(gradcheck<double>([&](const V& v) { return op::unary(r.op, v[0], p); }, {x}));
}

INSTANTIATE_TEST_SUITE_P(OpTable, UnaryOpGradcheck, ::testing::ValuesIn(table_ops()),
                         [](const auto& info) { return std::string(op_name(info.param)); });

TEST(Gradcheck, NamedUnaryFactories) {
  auto x = rnd({3, 5}, 4);
  auto pos = rnd({3, 5}, 5, 0.2, 2.0);
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::negative(v[0]); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::exp(v[0]); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::log(v[0]); }, {pos}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::sigmoid(v[0]); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::tanh(v[0]); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::relu(v[0]); }, {x}));  // no element at 0
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::pow(v[0], 2); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::pow(v[0], 3); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::pow(v[0], 0.5); }, {pos}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::scalarproduct(-2.5, v[0]); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::mul(4, v[0]); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::add_scalar(v[0], 1.5); }, {x}));
}

// -- matrices --------------------------------------------------------------------------------------------
TEST(Gradcheck, MatmulAllTransposes) {
  auto a = rnd({3, 4}, 6), at = rnd({4, 3}, 7), b = rnd({4, 5}, 8), bt = rnd({5, 4}, 9);
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::matmul(v[0], v[1]); }, {a, b}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::matmul(v[0], v[1], true, false); }, {at, b}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::matmul(v[0], v[1], false, true); }, {a, bt}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::matmul(v[0], v[1], true, true); }, {at, bt}));
}

TEST(Gradcheck, LinearWithAndWithoutBias) {
  auto x = rnd({4, 3}, 10), w = rnd({5, 3}, 11), b = rnd({5}, 12);
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::linear(v[0], v[1], v[2]); }, {x, w, b}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::linear(v[0], v[1]); }, {x, w}));
}

TEST(Gradcheck, Transpose) {
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::transpose(v[0]); }, {rnd({3, 5}, 13)}));
}

// -- reductions and sums -------------------------------------------------------------------------------------
TEST(Gradcheck, Reductions) {
  auto x = rnd({2, 3, 4}, 14);
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::reduce_sum(v[0]); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::mean(v[0]); }, {x}));
  for (std::int64_t axis : {0, 1, 2, -1}) {
    EXPECT_TRUE(gradcheck<double>([axis](const V& v) { return op::reduce_sum(v[0], axis); }, {x}));
    EXPECT_TRUE(gradcheck<double>([axis](const V& v) { return op::mean(v[0], axis, true); }, {x}));
  }
}

TEST(Reductions, ArgMaxValuesShapesAndZeroGradient) {
  const Tensor<double> x = Tensor<double>::from_vector(Shape{2, 3}, std::vector<double>{1, 5, 5, 7, -1, 2}, HOST);
  auto v = op::var<double>("x", x.shape(), {NONE}, HOST);
  v->set_value(x);
  const auto rows = op::argmax(v, 1);
  ASSERT_EQ(rows->eval()->shape(), Shape({2}));
  EXPECT_EQ(rows->eval()->get(0), 1.0);  // the first of the tied 5s
  EXPECT_EQ(rows->eval()->get(1), 0.0);
  const auto cols = op::argmax(v, 0, true);
  ASSERT_EQ(cols->eval()->shape(), Shape({1, 3}));
  EXPECT_EQ(cols->eval()->get(1), 0.0);
  EXPECT_EQ(cols->eval()->get(2), 0.0);
  EXPECT_TRUE(gradcheck<double>([](const V& w) { return op::argmax(w[0], -1); }, {rnd({3, 4}, 23)}));
}

TEST(Gradcheck, AddNWithBroadcast) {
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::sum(std::vector<op::Var<double>>{v[0], v[1], v[2]}); },
                                {rnd({3, 4}, 15), rnd({4}, 16), rnd({3, 1}, 17)}));
}

// -- fan-out: one node feeding three or more consumers -----------------------------------------------------
TEST(Gradcheck, FanOutOfThreeAndMore) {
  EXPECT_TRUE(gradcheck<double>(
      [](const V& v) {
        auto h = op::tanh(op::matmul(v[0], v[1]));  // h has 4 consumers, v[0] has 3
        return op::add_n(std::vector<op::Expr<double>>{op::product(h, h), op::sigmoid(h), h,
                                                       op::matmul(op::transpose(v[0]), op::exp(h)),
                                                       op::product(v[0], v[0])});
      },
      {rnd({3, 3}, 18), rnd({3, 3}, 19)}));
}

// -- float graphs within a looser tolerance ---------------------------------------------------------------
TEST(Gradcheck, FloatVariant) {
  using VF = std::vector<op::Var<float>>;
  auto x = random_tensor<float>({3, 4}, 20), w = random_tensor<float>({2, 4}, 21), b = random_tensor<float>({2}, 22);
  EXPECT_TRUE(gradcheck<float>([](const VF& v) { return op::sigmoid(op::linear(v[0], v[1], v[2])); }, {x, w, b},
                               float_options()));
}

// -- layout ------------------------------------------------------------------------------------------------
TEST(Gradcheck, ReshapeFlattenConcat) {
  auto x = rnd({2, 3, 4}, 23);
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::reshape(v[0], {4, -1}); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::flatten(v[0]); }, {x}));
  for (std::int64_t axis : {0, 1, 2}) {
    std::vector<std::int64_t> d1{2, 3, 4}, d2{2, 3, 4};
    d2[static_cast<std::size_t>(axis)] = 1 + axis;
    EXPECT_TRUE(gradcheck<double>([axis](const V& v) { return op::concat(v[0], v[1], axis); },
                                  {x, rnd(Shape(d2), 24 + axis)}))
        << "axis " << axis;
  }
}

TEST(Gradcheck, PermuteEveryOrderOfThreeAxes) {
  auto x = rnd({2, 3, 4}, 21);
  for (std::vector<int> p : {std::vector<int>{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}) {
    EXPECT_TRUE(gradcheck<double>([p](const V& v) { return op::permute(v[0], p); }, {x}));
  }
  auto v = op::var<double>("x", Shape{2, 3, 4}, {NONE}, HOST);
  v->set_value(x);
  const auto y = op::permute(v, {2, 0, 1});
  ASSERT_EQ(y->eval()->shape(), Shape({4, 2, 3}));
  EXPECT_EQ(y->eval()->get((3 * 2 + 1) * 3 + 2), x.get((1 * 3 + 2) * 4 + 3));  // y[3][1][2] = x[1][2][3]
  EXPECT_THROW(op::permute(v, {0, 0, 1}), ValueError);
  EXPECT_THROW(op::permute(v, {1, 0})->eval(), ShapeError);
}

TEST(Gradcheck, SliceOfEachAxis) {
  auto x = rnd({3, 4, 5}, 22);
  for (std::int64_t axis : {0, 1, 2, -1}) {
    EXPECT_TRUE(gradcheck<double>([axis](const V& v) { return op::slice(v[0], axis, 1, 3); }, {x}));
  }
  auto v = op::var<double>("x", Shape{3, 4, 5}, {NONE}, HOST);
  v->set_value(x);
  const auto y = op::slice(v, 2, 1, 4);
  ASSERT_EQ(y->eval()->shape(), Shape({3, 4, 3}));
  EXPECT_EQ(y->eval()->get((2 * 4 + 3) * 3 + 2), x.get((2 * 4 + 3) * 5 + 3));  // y[2][3][2] = x[2][3][3]
  EXPECT_EQ(op::slice(v, 0, 1, 1)->eval()->shape(), Shape({0, 4, 5}));
  EXPECT_THROW(op::slice(v, 1, 2, 5)->eval(), ShapeError);
}

TEST(Gradcheck, ConvTranspose2d) {
  // x {2, 4, 3, 3}, w {4, 3, 2, 2} (2 groups: 4 -> 6 channels), stride 2,
  // pad 1: the output {2, 6, 4, 4} convolves back to 3 x 3.
  conv::ConvParams p;
  p.stride_h = p.stride_w = 2;
  p.pad_h = p.pad_w = 1;
  p.groups = 2;
  EXPECT_TRUE(gradcheck<double>([&](const V& v) { return op::conv_transpose2d(v[0], v[1], op::Expr<double>(v[2]), p, 4, 4); },
                                {rnd({2, 4, 3, 3}, 24), rnd({4, 3, 2, 2}, 25), rnd({6}, 26)}));
  // The adjoint of conv2d: <conv2d(y, w), x> = <y, conv_transpose2d(x, w)>.
  auto x = op::var<double>("x", Shape{2, 4, 3, 3}, {NONE}, HOST), w = op::var<double>("w", Shape{4, 3, 2, 2}, {NONE}, HOST);
  auto y = op::var<double>("y", Shape{2, 6, 4, 4}, {NONE}, HOST);
  x->set_value(rnd({2, 4, 3, 3}, 27));
  w->set_value(rnd({4, 3, 2, 2}, 28));
  y->set_value(rnd({2, 6, 4, 4}, 29));
  const double lhs = op::reduce_sum(op::product(op::conv2d(y, w, p), x))->eval()->get(std::int64_t{0});
  const double rhs = op::reduce_sum(op::product(y, op::conv_transpose2d(x, w, op::Expr<double>(), p, 4, 4)))->eval()->get(std::int64_t{0});
  EXPECT_NEAR(lhs, rhs, 1e-10 * std::abs(lhs) + 1e-12);
  EXPECT_THROW(op::conv_transpose2d(x, w, op::Expr<double>(), p, 9, 4)->eval(), ShapeError);
}

TEST(Layout, ConcatValues) {
  auto a = op::var<double>("a", {2, 1}, {CONSTANT, {1.0}}, HOST);
  auto b = op::var<double>("b", {2, 2}, {CONSTANT, {2.0}}, HOST);
  auto c = op::concat(a, b, 1);  // the handle keeps the node (and its output) alive
  Tensor<double>* out = c->eval();
  ASSERT_EQ(out->shape(), Shape({2, 3}));
  EXPECT_EQ(out->to_vector(), (std::vector<double>{1, 2, 2, 1, 2, 2}));
}

// -- softmax and losses ---------------------------------------------------------------------------------------
TEST(Gradcheck, SoftmaxAndLogSoftmax) {
  auto x = rnd({3, 5}, 30, -3, 3);
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::softmax(v[0]); }, {x}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::log_softmax(v[0]); }, {x}));
}

TEST(Gradcheck, Losses) {
  auto logits = rnd({4, 3}, 31, -2, 2);
  auto probs = rnd({4, 3}, 32, 0.1, 1.0);
  auto labels = Tensor<double>::from_vector({4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 0.2, 0.3, 0.5}, HOST);
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::crossentropy(v[1], v[0]); }, {probs, labels}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::softmax_crossentropy(v[0], v[1]); }, {logits, labels}));
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::mse(v[0], v[1]); }, {logits, probs}));
}

TEST(Losses, SoftmaxCrossEntropyIsStableAndMatchesComposition) {
  auto z = op::var<double>("z", {2, 3}, {NONE}, HOST);
  z->set_value(Tensor<double>::from_vector({2, 3}, {1000, 0, -1000, 0.5, 0.1, -0.3}, HOST));
  auto y = op::constant<double>("y", Tensor<double>::from_vector({2, 3}, {0, 1, 0, 1, 0, 0}, HOST));
  const double fused = op::softmax_crossentropy(z, y)->eval()->get(std::int64_t{0});
  EXPECT_TRUE(std::isfinite(fused));
  // Row 0: -log softmax = 1000; row 1 by hand.
  const double lse = std::log(std::exp(0.5) + std::exp(0.1) + std::exp(-0.3));
  EXPECT_NEAR(fused, (1000.0 + (lse - 0.5)) / 2.0, 1e-9);
}

// -- mode-dependent ops -------------------------------------------------------------------------------------------
TEST(Gradcheck, BatchNormTrainAndEval) {
  auto x = rnd({5, 3}, 40, -2, 2), gamma = rnd({3}, 41, 0.5, 1.5), beta = rnd({3}, 42);
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::batchnorm(v[0], v[1], v[2]); }, {x, gamma, beta}));
  auto x4 = rnd({2, 3, 2, 2}, 43, -2, 2);
  EXPECT_TRUE(gradcheck<double>([](const V& v) { return op::batchnorm(v[0], v[1], v[2]); }, {x4, gamma, beta}));
  EXPECT_TRUE(gradcheck<double>(
      [](const V& v) {
        auto bn = op::batchnorm(v[0], v[1], v[2]);
        op::set_training(bn, false);
        return bn;
      },
      {x, gamma, beta}));
}

TEST(Regularization, BatchNormStatistics) {
  auto x = op::var<double>("x", {4, 2}, {NONE}, HOST);
  x->set_value(Tensor<double>::from_vector({4, 2}, {1, 10, 2, 20, 3, 30, 4, 40}, HOST));
  auto gamma = op::var<double>("g", {2}, {ONE, {}}, HOST);
  auto beta = op::var<double>("b", {2}, {ZERO, {}}, HOST);
  auto bn = op::batchnorm(x, gamma, beta, 0.1, 0.0);
  Tensor<double>* y = bn->eval();
  // Column 0: mean 2.5, biased var 1.25.
  EXPECT_NEAR(y->get({0, 0}), (1 - 2.5) / std::sqrt(1.25), 1e-12);
  auto* node = dynamic_cast<op::BatchNormNode<double>*>(bn.get());
  ASSERT_NE(node, nullptr);
  EXPECT_NEAR(node->running_mean().get(std::int64_t{0}), 0.25, 1e-12);
  EXPECT_NEAR(node->running_var().get(std::int64_t{0}), 0.9 + 0.1 * (1.25 * 4 / 3), 1e-12);
  op::set_training(bn, false);
  EXPECT_NEAR(bn->eval()->get({0, 0}), (1 - 0.25) / std::sqrt(0.9 + 0.1 * (1.25 * 4 / 3)), 1e-12);
}

TEST(Regularization, DropoutMaskAndGradient) {
  set_seed(7);
  auto x = op::var<double>("x", {50, 40}, {CONSTANT, {2.0}}, HOST);
  auto d = op::dropout(x, 0.75);
  Tensor<double> y = *d->eval();
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < y.size(); ++i) {
    const double v = y.get(i);
    ASSERT_TRUE(v == 0.0 || std::abs(v - 2.0 / 0.75) < 1e-12) << v;
    kept += v != 0.0;
  }
  EXPECT_NEAR(double(kept) / double(y.size()), 0.75, 0.05);
  auto g = op::gradients(d, {x});
  for (std::int64_t i = 0; i < y.size(); i += 97) EXPECT_DOUBLE_EQ(g.get(x)->get(i), y.get(i) / 2.0);
  // Same seed, same mask.
  set_seed(7);
  auto d2 = op::dropout(x, 0.75);
  EXPECT_EQ(d2->eval()->to_vector(), y.to_vector());
  // Eval mode is the identity.
  op::set_training(d, false);
  EXPECT_EQ(d->eval()->to_vector(), std::vector<double>(2000, 2.0));
}

// The fused elementwise node (target of the planned fusion pass) is exact.
TEST(Gradcheck, FusedUnaryChain) {
  using Step = op::UnaryChainNode<double>::Step;
  auto build = [](const V& v) {
    std::vector<Step> steps{{UnaryOp::Tanh, 0.0}, {UnaryOp::Scale, 2.0}, {UnaryOp::Exp, 0.0}};
    return op::make_expr<double>(std::make_shared<op::UnaryChainNode<double>>(steps, op::to_node(v[0])));
  };
  auto x = rnd({3, 4}, 50);
  EXPECT_TRUE(gradcheck<double>(build, {x}));
  auto v = op::var<double>("v", {3, 4}, {NONE}, HOST);
  v->set_value(x);
  auto fused = build({v});
  auto plain = op::exp(op::scalarproduct(2.0, op::tanh(v)));
  EXPECT_EQ(fused->eval()->to_vector(), plain->eval()->to_vector());
}
