// Mixed precision (bf16 on the CPU): each low-precision op against a double
// reference of the same float inputs, within a bound derived from bf16's
// rounding and the reduction length; the autocast table, op by op; the bf16
// weight cache (one cast per step, not one per use).
//
// The bound: tests/support/rounding_bound.h, with bf16's unit roundoff 2^-8.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/compute/autocast.h"
#include "magmadnn/compute/compute.h"
#include "magmadnn/conv/conv.h"
#include "magmadnn/conv/conv_bf16.h"
#include "magmadnn/core/determinism.h"
#include "magmadnn/optimizer/optimizer.h"
#include "magmadnn/tensor/math.h"
#include "support/gradcheck.h"
#include "support/shapes.h"
#include "support/rounding_bound.h"

using namespace magmadnn;
using magmadnn::testing::random_tensor;

namespace {

constexpr double kU = test::kBf16Roundoff;
using test::abs_of;
using test::gamma_f32;
using test::square_of;
using test::ConvCase;
using test::GemmCase;

Tensor<double> to_double(const Tensor<float>& t) { return t.cast<double>(); }

// The bf16 bound of rounding_bound.h.
void expect_within_bf16_bound(const Tensor<float>& got, const Tensor<double>& ref, const Tensor<double>& abs_sum,
                              const Tensor<double>& sq_sum, std::int64_t k, const Tensor<float>* f32 = nullptr,
                              double scale = 1.0) {
  test::RoundingBound b;
  b.scale = scale;
  test::expect_within_rounding_bound(got, ref, abs_sum, sq_sum, k, b, f32);
}

class Bf16Gemm : public ::testing::TestWithParam<GemmCase> {};

TEST_P(Bf16Gemm, MatmulWithinRoundingBound) {
  const GemmCase c = GetParam();
  const Shape sa = c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k};
  const Shape sb = c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n};
  const Tensor<float> a = random_tensor<float>(sa, 11 + c.k, -2.0, 2.0);
  const Tensor<float> b = random_tensor<float>(sb, 12 + c.n, -1.0, 1.0);
  const Tensor<float> got = math::matmul_mixed(a.cast<bfloat16>(), b.cast<bfloat16>(), c.ta, c.tb);
  const Tensor<float> f32 = math::matmul(a, b, c.ta, c.tb);
  const Tensor<double> da = to_double(a), db = to_double(b);
  const Tensor<double> ref = math::matmul(da, db, c.ta, c.tb);
  const Tensor<double> abs_sum = math::matmul(abs_of(da), abs_of(db), c.ta, c.tb);
  const Tensor<double> sq_sum = math::matmul(square_of(da), square_of(db), c.ta, c.tb);
  expect_within_bf16_bound(got, ref, abs_sum, sq_sum, c.k, &f32);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Bf16Gemm, ::testing::ValuesIn(test::gemm_cases()));

TEST(Bf16Gemm, LinearWithBiasAndReluWithinRoundingBound) {
  // relu is 1-Lipschitz and the bias is added in float, so the GEMM's bound
  // holds for act(x w^T + b) too.
  const std::int64_t batch = 100, in = 784, out = 528;
  const Tensor<float> x = random_tensor<float>({batch, in}, 21, 0.0, 1.0);
  const Tensor<float> w = random_tensor<float>({out, in}, 22, -0.1, 0.1);
  const Tensor<float> bias = random_tensor<float>({out}, 23, -0.5, 0.5);
  Tensor<float> got({batch, out}, HOST), f32({batch, out}, HOST);
  math::linear_mixed(x.cast<bfloat16>(), w.cast<bfloat16>(), &bias, UnaryOp::Relu, 0.f, got);
  math::linear(x, w, &bias, UnaryOp::Relu, 0.f, f32);
  const Tensor<double> dx = to_double(x), dw = to_double(w);
  Tensor<double> ref({batch, out}, HOST);
  const Tensor<double> dbias = to_double(bias);
  math::linear(dx, dw, &dbias, UnaryOp::Relu, 0.0, ref);
  const Tensor<double> abs_sum = math::matmul(abs_of(dx), abs_of(dw), false, true);
  const Tensor<double> sq_sum = math::matmul(square_of(dx), square_of(dw), false, true);
  expect_within_bf16_bound(got, ref, abs_sum, sq_sum, in, &f32);
}

TEST(Bf16Gemm, AccumulatesIntoFloatMastersWithBeta) {
  // W = beta W + alpha dz^T x (matmul_mixed with beta, as float's folded SGD
  // update): W stays float, and only the product carries bf16's error
  // (scaled by |alpha|).
  const std::int64_t batch = 64, in = 300, out = 200;
  const Tensor<float> dz = random_tensor<float>({batch, out}, 31);
  const Tensor<float> x = random_tensor<float>({batch, in}, 32, 0.0, 1.0);
  const Tensor<float> w0 = random_tensor<float>({out, in}, 33, -0.1, 0.1);
  const float alpha = -0.05f, beta = 0.999f;
  Tensor<float> w = w0;
  math::matmul_mixed(alpha, dz.cast<bfloat16>(), true, x.cast<bfloat16>(), false, beta, w);
  Tensor<double> ref = to_double(w0);
  math::matmul(double(alpha), to_double(dz), true, to_double(x), false, double(beta), ref);
  const Tensor<double> abs_sum = math::matmul(abs_of(to_double(dz)), abs_of(to_double(x)), true, false);
  const Tensor<double> sq_sum = math::matmul(square_of(to_double(dz)), square_of(to_double(x)), true, false);
  // beta * w rounds once in float: covered by the 2^-23 |ref| term.
  expect_within_bf16_bound(w, ref, abs_sum, sq_sum, batch, nullptr, std::abs(alpha));
}

// -- convolution ------------------------------------------------------------------------

class Bf16Conv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Bf16Conv, ThreePassesWithinRoundingBound) {
  const ConvCase c = GetParam();
  const std::int64_t cg = c.c / c.geom.groups;
  const Tensor<float> x = random_tensor<float>({c.n, c.c, c.h, c.w}, 41, 0.0, 1.0);
  const Tensor<float> w = random_tensor<float>({c.k, cg, c.r, c.r}, 42, -0.5, 0.5);
  const Tensor<float> bias = random_tensor<float>({c.k}, 43);
  const Tensor<double> dx = to_double(x), dw = to_double(w);
  const auto direct = conv::Algo::Direct;

  // Forward: each output sums K = C/G * R * S products.
  const Tensor<float> y = conv::conv2d_forward_bf16(x.cast<bfloat16>(), w.cast<bfloat16>(), &bias, c.geom);
  const Tensor<double> dbias = to_double(bias);
  const Tensor<double> y_ref = conv::conv2d_forward(dx, dw, &dbias, c.geom, direct);
  const Tensor<float> y_f32 = conv::conv2d_forward(x, w, &bias, c.geom);
  expect_within_bf16_bound(y, y_ref, conv::conv2d_forward<double>(abs_of(dx), abs_of(dw), nullptr, c.geom, direct),
                           conv::conv2d_forward<double>(square_of(dx), square_of(dw), nullptr, c.geom, direct),
                           cg * c.r * c.r, &y_f32);

  // Backward data: each dx sums at most K/G * R * S products.
  const Tensor<float> dy = random_tensor<float>(y.shape(), 44);
  const Tensor<double> ddy = to_double(dy);
  const Tensor<float> gx = conv::conv2d_backward_data_bf16(dy.cast<bfloat16>(), w.cast<bfloat16>(), x.shape(), c.geom);
  expect_within_bf16_bound(gx, conv::conv2d_backward_data(ddy, dw, x.shape(), c.geom, direct),
                           conv::conv2d_backward_data(abs_of(ddy), abs_of(dw), x.shape(), c.geom, direct),
                           conv::conv2d_backward_data(square_of(ddy), square_of(dw), x.shape(), c.geom, direct),
                           c.k / c.geom.groups * c.r * c.r);

  // Backward filter: each dw sums N * P * Q products; db is a float sum of dy.
  Tensor<float> gb;
  const Tensor<float> gw =
      conv::conv2d_backward_filter_bf16(x.cast<bfloat16>(), dy.cast<bfloat16>(), w.shape(), c.geom, &gb);
  Tensor<double> db_ref;
  const Tensor<double> gw_ref = conv::conv2d_backward_filter(dx, ddy, w.shape(), c.geom, direct, &db_ref);
  expect_within_bf16_bound(
      gw, gw_ref, conv::conv2d_backward_filter(abs_of(dx), abs_of(ddy), w.shape(), c.geom, direct),
      conv::conv2d_backward_filter(square_of(dx), square_of(ddy), w.shape(), c.geom, direct),
      c.n * y.shape()[2] * y.shape()[3]);
  // db reads dy in bf16 (the rounded copy oneDNN was given): its error is
  // that rounding, at most u * sum |dy| per channel.
  const Tensor<double> db_abs = math::sum(math::sum(math::sum(abs_of(ddy), 3), 2), 0);
  const std::vector<float> g = gb.to_vector();
  const std::vector<double> r = db_ref.to_vector(), a = db_abs.to_vector();
  for (std::size_t i = 0; i < g.size(); ++i) {
    EXPECT_LE(std::abs(g[i] - r[i]), (kU + gamma_f32(c.n * y.shape()[2] * y.shape()[3])) * a[i]) << "db " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Bf16Conv, ::testing::ValuesIn(test::conv_cases()));  // groups

// -- the autocast table, op by op ----------------------------------------------------------

TEST(Autocast, TableSaysGemmAndConvLowEverythingElseFloat) {
  const std::map<autocast::OpKind, bool> want = {
      {autocast::OpKind::Gemm, true},           {autocast::OpKind::Conv, true},
      {autocast::OpKind::Softmax, false},       {autocast::OpKind::CrossEntropy, false},
      {autocast::OpKind::Reduction, false},     {autocast::OpKind::Normalization, false},
      {autocast::OpKind::Loss, false},          {autocast::OpKind::Pooling, false},
      {autocast::OpKind::Elementwise, false}};
  ASSERT_EQ(autocast::table().size(), want.size());
  for (const autocast::Rule& r : autocast::table()) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(r.low_precision, want.at(r.kind));
    EXPECT_EQ(&autocast::rule(r.kind), &r);
    const dtype low = r.low_precision ? dtype::bf16 : dtype::f32;
    EXPECT_EQ(autocast::compute_dtype(r.kind, Precision::BF16), low);
    EXPECT_EQ(autocast::compute_dtype(r.kind, Precision::FP16), r.low_precision ? dtype::f16 : dtype::f32);
    EXPECT_EQ(autocast::compute_dtype(r.kind, Precision::FP32), dtype::f32);
    EXPECT_EQ(autocast::compute_dtype(r.kind, Precision::TF32), dtype::f32);
  }
}

TEST(Autocast, ScopesNestAndRestore) {
  EXPECT_EQ(autocast::current(), Precision::FP32);
  {
    autocast::AutocastScope a(Precision::BF16);
    EXPECT_TRUE(autocast::bf16(autocast::OpKind::Gemm));
    EXPECT_FALSE(autocast::bf16(autocast::OpKind::Softmax));
    {
      autocast::AutocastScope b(Precision::FP32);
      EXPECT_FALSE(autocast::bf16(autocast::OpKind::Gemm));
    }
    EXPECT_EQ(autocast::current(), Precision::BF16);
  }
  EXPECT_EQ(autocast::current(), Precision::FP32);
}

// One small graph per op kind. Evaluated at fp32 and under a bf16 scope: a
// kind the table keeps in float gives the same bits; a low-precision kind
// gives different ones (its accuracy is the business of the tests above).
using KindGraph = std::function<op::Expr<float>()>;

std::map<autocast::OpKind, KindGraph> graphs_by_kind() {
  auto v = [](const char* name, const Shape& s, std::uint64_t seed, double lo = -1, double hi = 1) {
    return op::constant<float>(name, random_tensor<float>(s, seed, lo, hi));
  };
  const Tensor<float> onehot = Tensor<float>::from_vector({2, 3}, {0, 1, 0, 1, 0, 0}, HOST);
  conv::PoolParams pool;
  return {
      {autocast::OpKind::Gemm, [=] { return op::matmul(v("a", {16, 64}, 1), v("b", {64, 8}, 2)); }},
      {autocast::OpKind::Conv, [=] { return op::conv2d(v("x", {1, 2, 8, 8}, 3), v("w", {3, 2, 3, 3}, 4)); }},
      {autocast::OpKind::Softmax, [=] { return op::softmax(v("x", {4, 10}, 5)); }},
      {autocast::OpKind::CrossEntropy,
       [=] { return op::softmax_crossentropy(v("z", {2, 3}, 6), op::constant<float>("y", onehot)); }},
      {autocast::OpKind::Reduction, [=] { return op::reduce_sum(v("x", {7, 9}, 7), 0); }},
      {autocast::OpKind::Normalization,
       [=] { return op::batchnorm(v("x", {8, 4}, 8), v("g", {4}, 9, 0.5, 1.5), v("b", {4}, 10)); }},
      {autocast::OpKind::Loss, [=] { return op::mse(v("p", {5, 3}, 11), v("t", {5, 3}, 12)); }},
      {autocast::OpKind::Pooling, [=] { return op::pooling(v("x", {1, 2, 6, 6}, 13), pool); }},
      {autocast::OpKind::Elementwise, [=] { return op::relu(op::add(v("a", {6, 5}, 14), v("b", {6, 5}, 15))); }},
  };
}

TEST(Autocast, EachOpKindComputesAsTheTableSays) {
  // Whatever the timing says about this tiny convolution, test the table's word.
  conv::set_bf16_conv_policy(conv::Bf16ConvPolicy::Always);
  const auto graphs = graphs_by_kind();
  ASSERT_EQ(graphs.size(), autocast::table().size()) << "a kind of the table has no graph here";
  for (const autocast::Rule& r : autocast::table()) {
    SCOPED_TRACE(r.name);
    const std::vector<float> f32 = graphs.at(r.kind)()->eval()->to_vector();
    std::vector<float> bf16;
    {
      autocast::AutocastScope scope(Precision::BF16);
      bf16 = graphs.at(r.kind)()->eval()->to_vector();
    }
    if (r.low_precision) {
      EXPECT_NE(f32, bf16) << "a low-precision kind computed in float";
    } else {
      EXPECT_EQ(f32, bf16) << "a float kind changed under bf16";
    }
  }
  conv::set_bf16_conv_policy(conv::Bf16ConvPolicy::Timed);
}

TEST(Autocast, DeterministicRunsChooseBf16ConvolutionsByTheChannelRule) {
  // Timing could pick differently between runs, and a bf16 pass rounds
  // differently from a float one; a deterministic run answers by the rule,
  // before any timing, and the same way for every pass.
  const DeterministicScope deterministic(true);
  const auto problem = [](std::int64_t c, std::int64_t k, std::int64_t groups) {
    conv::ConvParams g;
    g.groups = groups;
    return conv::make_problem(Shape{2, c, 8, 8}, Shape{k, c / groups, 3, 3}, g);
  };
  const std::int64_t m = conv::kLowPrecisionConvMinChannels;
  // Where oneDNN has no bf16 convolution (AVX2 CPUs), none takes bf16: the
  // widened operands would only add work to the float pass.
  const bool native = conv::bf16_conv_native();
  for (conv::Pass pass : {conv::Pass::Forward, conv::Pass::BackwardData, conv::Pass::BackwardFilter}) {
    EXPECT_FALSE(conv::bf16_conv_pays(problem(1, 6, 1), pass)) << "LeNet-5's first layer";
    EXPECT_FALSE(conv::bf16_conv_pays(problem(6, 16, 1), pass)) << "LeNet-5's second layer";
    EXPECT_FALSE(conv::bf16_conv_pays(problem(m, m - 1, 1), pass));
    EXPECT_EQ(conv::bf16_conv_pays(problem(m, m, 1), pass), native);
    EXPECT_EQ(conv::bf16_conv_pays(problem(64, 64, 1), pass), native);
    EXPECT_FALSE(conv::bf16_conv_pays(problem(2 * m, 2 * m, 4), pass)) << "8 channels per group";
    EXPECT_EQ(conv::bf16_conv_pays(problem(2 * m, 2 * m, 2), pass), native);
  }
  // The rule itself, on any CPU.
  EXPECT_FALSE(conv::low_precision_conv_by_rule(problem(6, 16, 1)));
  EXPECT_FALSE(conv::low_precision_conv_by_rule(problem(m, m - 1, 1)));
  EXPECT_TRUE(conv::low_precision_conv_by_rule(problem(m, m, 1)));
  EXPECT_FALSE(conv::low_precision_conv_by_rule(problem(2 * m, 2 * m, 4)));
  EXPECT_TRUE(conv::low_precision_conv_by_rule(problem(2 * m, 2 * m, 2)));
}

// -- the bf16 weight cache ---------------------------------------------------------------

// A 2-layer MLP whose second weight is read by two GEMMs per step (forward,
// and the input gradient of backward). `in` x `hidden` >= 65536 makes W1 one
// that float folds its SGD update into a GEMM (LinearNode::backward_into).
struct Mlp {
  op::Var<float> x, y, w1, b1, w2;
  op::Expr<float> loss;
};

Mlp make_mlp(std::int64_t in = 64, std::int64_t hidden = 48) {
  Mlp m;
  m.x = op::placeholder<float>("x", {32, in}, HOST);
  m.x->set_value(random_tensor<float>({32, in}, 51, 0, 1));
  std::vector<float> onehot(32 * 10, 0.f);
  for (int i = 0; i < 32; ++i) onehot[i * 10 + i % 10] = 1.f;
  m.y = op::constant<float>("y", Tensor<float>::from_vector({32, 10}, onehot, HOST));
  Tensor<float> w1 = random_tensor<float>({hidden, in}, 52, -0.2, 0.2);
  Tensor<float> b1 = random_tensor<float>({hidden}, 53, -0.1, 0.1);
  Tensor<float> w2 = random_tensor<float>({10, hidden}, 54, -0.2, 0.2);
  m.w1 = op::var<float>("W1", &w1);
  m.b1 = op::var<float>("b1", &b1);
  m.w2 = op::var<float>("W2", &w2);
  m.loss = op::softmax_crossentropy(op::linear(op::sigmoid(op::linear(m.x, m.w1, m.b1)), m.w2), m.y);
  return m;
}

// Restores the process-wide switch a test changes.
struct FusedUpdateCasts {
  explicit FusedUpdateCasts(bool on) { autocast::set_fused_update_casts(on); }
  ~FusedUpdateCasts() { autocast::set_fused_update_casts(true); }
};

// Each weight is cast once per step with the cast left to the GEMMs, and
// once in all with the update writing its bf16 copy (the first forward's
// cast; every update since kept the copy current).
template <typename Opt>
void expect_casts_per_step(Opt& opt, bool fused, std::int64_t in = 64, std::int64_t hidden = 48) {
  const FusedUpdateCasts mode(fused);
  Mlp m = make_mlp(in, hidden);
  autocast::AutocastScope scope(Precision::BF16);
  const int steps = 5;
  const std::uint64_t before = autocast::cast_count();
  for (int s = 0; s < steps; ++s) opt.minimize(m.loss, {m.w1, m.b1, m.w2});
  const std::uint64_t weight_casts = fused ? 1 : steps;
  EXPECT_EQ(m.w2->low_precision_casts(), weight_casts) << "W2 is read by two GEMMs a step";
  EXPECT_EQ(m.w1->low_precision_casts(), weight_casts);
  EXPECT_EQ(m.w1->low_precision_cache().fused_updates(), fused ? static_cast<std::uint64_t>(steps) : 0u);
  EXPECT_EQ(m.w2->low_precision_cache().fused_updates(), fused ? static_cast<std::uint64_t>(steps) : 0u);
  EXPECT_EQ(m.x->low_precision_casts(), 1u) << "x never changed: cast once, reused by forward and dW1";
  EXPECT_EQ(m.b1->low_precision_casts(), 0u) << "a bias is added in float";
  EXPECT_EQ(m.b1->low_precision_cache().fused_updates(), 0u) << "no bf16 copy of a bias is kept";
  // Besides the weights, each step casts the sigmoid's output (x of the
  // second GEMM) and the two incoming gradients: 3 a step, the same in
  // both modes.
  EXPECT_EQ(autocast::cast_count() - before, 1 + 3 * steps + 2 * weight_casts);
}

TEST(Bf16Cache, OneCastPerStepWithSgdFoldedIntoBackward) {
  optimizer::GradientDescent<float> sgd(0.1);
  expect_casts_per_step(sgd, false);
}

TEST(Bf16Cache, OneCastPerStepWithAdam) {
  optimizer::Adam<float> adam(1e-3);
  expect_casts_per_step(adam, false);
}

TEST(Bf16Cache, UpdatesWriteTheWeightCopiesSoNoStepCastsAWeight) {
  {
    SCOPED_TRACE("plain SGD with weight decay, applied in backward (op::backward_update)");
    optimizer::GradientDescent<float> sgd(0.1);
    sgd.set_weight_decay(1e-3);
    ASSERT_TRUE(sgd.in_place_update().has_value());
    expect_casts_per_step(sgd, true);
  }
  {
    SCOPED_TRACE("the same with W1 large enough that float folds its update into a GEMM");
    optimizer::GradientDescent<float> sgd(0.1);
    expect_casts_per_step(sgd, true, 256, 300);
  }
  {
    SCOPED_TRACE("SGD with momentum");
    optimizer::GradientDescent<float> sgd(0.1, 0.9);
    expect_casts_per_step(sgd, true);
  }
  {
    SCOPED_TRACE("SGD with Nesterov momentum and L2 decay");
    optimizer::GradientDescent<float> sgd(0.1, 0.9, true);
    sgd.set_weight_decay(1e-3);
    expect_casts_per_step(sgd, true);
  }
  {
    SCOPED_TRACE("Adam");
    optimizer::Adam<float> adam(1e-3);
    expect_casts_per_step(adam, true);
  }
  {
    SCOPED_TRACE("AdamW");
    optimizer::AdamW<float> adamw(1e-3);
    expect_casts_per_step(adamw, true);
  }
  {
    SCOPED_TRACE("AdaGrad");
    optimizer::AdaGrad<float> adagrad(1e-2);
    expect_casts_per_step(adagrad, true);
  }
  {
    SCOPED_TRACE("RMSProp");
    optimizer::RMSProp<float> rmsprop(1e-3);
    expect_casts_per_step(rmsprop, true);
  }
  {
    SCOPED_TRACE("LARS");
    optimizer::Lars<float> lars(0.1);
    expect_casts_per_step(lars, true);
  }
  {
    SCOPED_TRACE("LAMB");
    optimizer::Lamb<float> lamb(1e-3);
    expect_casts_per_step(lamb, true);
  }
}

// bit_cast of a float tensor's values, for comparisons that must be exact.
std::vector<std::uint32_t> bits_of(const Tensor<float>& t) {
  std::vector<std::uint32_t> out;
  for (std::int64_t i = 0; i < t.size(); ++i) out.push_back(std::bit_cast<std::uint32_t>(t.get(i)));
  return out;
}

struct RunBits {
  std::vector<std::uint32_t> w1, b1, w2, losses;
  std::uint64_t fused = 0;
};

// Trains the MLP for some steps at bf16 with `make()`'s optimizer and
// returns every weight's and loss's bits.
RunBits train_bf16(const std::function<std::unique_ptr<optimizer::Optimizer<float>>()>& make, bool fused,
                   std::int64_t in = 64, std::int64_t hidden = 48) {
  const FusedUpdateCasts mode(fused);
  Mlp m = make_mlp(in, hidden);
  autocast::AutocastScope scope(Precision::BF16);
  auto opt = make();
  RunBits r;
  for (int s = 0; s < 6; ++s) {
    opt->minimize(m.loss, {m.w1, m.b1, m.w2});
    r.losses.push_back(std::bit_cast<std::uint32_t>(m.loss->eval()->get(std::int64_t{0})));
  }
  r.w1 = bits_of(m.w1->value());
  r.b1 = bits_of(m.b1->value());
  r.w2 = bits_of(m.w2->value());
  r.fused = m.w1->low_precision_cache().fused_updates() + m.w2->low_precision_cache().fused_updates();
  return r;
}

TEST(Bf16Training, UpdatesWritingTheWeightCopiesChangeNoBit) {
  const std::map<std::string, std::function<std::unique_ptr<optimizer::Optimizer<float>>()>> optimizers = {
      {"sgd with decay (in backward)",
       [] {
         auto o = std::make_unique<optimizer::GradientDescent<float>>(0.5);
         o->set_weight_decay(1e-3);
         return o;
       }},
      {"sgd momentum", [] { return std::make_unique<optimizer::GradientDescent<float>>(0.5, 0.9); }},
      {"sgd nesterov", [] { return std::make_unique<optimizer::GradientDescent<float>>(0.5, 0.9, true); }},
      {"adam", [] { return std::make_unique<optimizer::Adam<float>>(1e-2); }},
      {"adagrad", [] { return std::make_unique<optimizer::AdaGrad<float>>(1e-2); }},
      {"rmsprop", [] { return std::make_unique<optimizer::RMSProp<float>>(1e-3); }},
      {"lars", [] { return std::make_unique<optimizer::Lars<float>>(0.5); }},
      {"lamb", [] { return std::make_unique<optimizer::Lamb<float>>(1e-2); }},
  };
  for (const auto& [name, make] : optimizers) {
    for (const auto [in, hidden] : {std::pair<std::int64_t, std::int64_t>{64, 48}, {256, 300}}) {
      SCOPED_TRACE(name + ", W1 " + std::to_string(hidden) + "x" + std::to_string(in));
      const RunBits off = train_bf16(make, false, in, hidden), on = train_bf16(make, true, in, hidden);
      EXPECT_EQ(off.fused, 0u);
      EXPECT_EQ(on.fused, 2u * 6u) << "the fused path did not run";
      EXPECT_EQ(on.losses, off.losses);
      EXPECT_EQ(on.w1, off.w1);
      EXPECT_EQ(on.b1, off.b1);
      EXPECT_EQ(on.w2, off.w2);
    }
  }
}

TEST(Bf16Cache, FusedAxpbyWritesWhatACastWouldBitForBit) {
  // Ties (both parities), values that round up into the next binade or to
  // infinity, subnormals (not flushed), signed zeros, infinities and NaNs,
  // then random values; over 70000 elements so that the threaded blocked
  // kernel runs with a partial last block.
  std::vector<float> y0 = {1.f + 0x1p-8f, 1.f + 3 * 0x1p-8f, -(1.f + 0x1p-8f), 0x1.fffffep127f, 0x1.ff8p127f,
                           0x1p-140f,     -0x1p-149f,        0.f,              -0.f,            INFINITY,
                           -INFINITY,     NAN,               0x1.fffep-1f,     1e-39f,          -3.4e38f};
  const std::size_t specials = y0.size();
  const Tensor<float> r = random_tensor<float>({70001}, 71, -100, 100);
  for (std::int64_t i = static_cast<std::int64_t>(specials); i < 70001; ++i) y0.push_back(r.get(i));
  const std::int64_t n = static_cast<std::int64_t>(y0.size());
  std::vector<float> xs(static_cast<std::size_t>(n), 0.f);
  for (std::int64_t i = static_cast<std::int64_t>(specials); i < n; ++i) xs[i] = r.get(n - 1 - i);
  const Tensor<float> x = Tensor<float>::from_vector({n}, xs, HOST);
  for (const auto [alpha, beta] : {std::pair{0.f, 1.f}, {-0.05f, 0.9995f}, {1.5f, -2.f}}) {
    Tensor<float> fused = Tensor<float>::from_vector({n}, y0, HOST), plain = fused;
    Tensor<bfloat16> copy({n}, HOST);
    math::axpby(alpha, x, beta, fused, copy);
    math::axpby(alpha, x, beta, plain);
    EXPECT_EQ(bits_of(fused), bits_of(plain)) << "alpha " << alpha << " beta " << beta;
    const Tensor<bfloat16> cast = plain.cast<bfloat16>();
    // Against the cast, and against bfloat16's scalar formula (the cast's
    // vector kernel must agree with it too).
    std::int64_t differ_cast = 0, differ_scalar = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const std::uint16_t scalar = bfloat16(plain.get(i)).bits;
      differ_cast += copy.get(i).bits != cast.get(i).bits;
      differ_scalar += copy.get(i).bits != scalar;
      if (i < static_cast<std::int64_t>(specials)) EXPECT_EQ(copy.get(i).bits, scalar) << "element " << i;
    }
    EXPECT_EQ(differ_cast, 0) << "alpha " << alpha << " beta " << beta;
    EXPECT_EQ(differ_scalar, 0) << "alpha " << alpha << " beta " << beta;
  }
}

TEST(Bf16Cache, RecastsAfterAWriteAndNotAfterARead) {
  Tensor<float> t = random_tensor<float>({4, 4}, 61);
  op::LowPrecisionCache cache;
  const std::uint64_t before = autocast::cast_count();
  cache.get<bfloat16>(t);
  cache.get<bfloat16>(t);
  (void)t.data();
  cache.get<bfloat16>(t);
  EXPECT_EQ(cache.casts(), 1u);
  t.set(0, 3.f);
  EXPECT_EQ(static_cast<float>(cache.get<bfloat16>(t).get(0)), 3.f);
  t.mutable_data()[1] = 5.f;
  EXPECT_EQ(static_cast<float>(cache.get<bfloat16>(t).get(1)), 5.f);
  EXPECT_EQ(cache.casts(), 3u);
  EXPECT_EQ(autocast::cast_count() - before, 3u);
  // A different tensor of the same shape is never mistaken for the first.
  Tensor<float> u = random_tensor<float>({4, 4}, 62);
  EXPECT_EQ(static_cast<float>(cache.get<bfloat16>(u).get(2)), static_cast<float>(bfloat16(u.get(2))));
  EXPECT_EQ(cache.casts(), 4u);
}

// The cache holds a half copy as it holds a bf16 one (precision fp16, whose
// GEMMs run on a GPU; the cache and the conversions it uses work anywhere),
// one type at a time.
TEST(LowPrecisionCache, HoldsAHalfCopyAndSwitchesTypeOnRequest) {
  const Tensor<float> t = random_tensor<float>({5, 7}, 63);
  op::LowPrecisionCache cache;
  EXPECT_EQ(cache.held(), dtype::f32);
  const std::vector<half> h = cache.get<half>(t).to_vector();
  EXPECT_EQ(cache.held(), dtype::f16);
  const std::vector<float> v = t.to_vector();
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(h[i].bits, half(v[i]).bits) << i;
  cache.get<half>(t);
  EXPECT_EQ(cache.casts(), 1u) << "unchanged: served from the copy";
  const std::vector<bfloat16> b = cache.get<bfloat16>(t).to_vector();
  EXPECT_EQ(cache.held(), dtype::bf16);
  EXPECT_EQ(cache.casts(), 2u) << "another type is another cast";
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(b[i].bits, bfloat16(v[i]).bits) << i;
  cache.get<half>(t);
  EXPECT_EQ(cache.casts(), 3u) << "the half copy was dropped for the bf16 one";
}

// Under fp16 an update that finds the half copy current writes it with the
// weight, bit for bit what a cast of the new weight gives.
TEST(LowPrecisionCache, FusedAxpbyWritesTheHalfCopyAsACastWould) {
  const autocast::AutocastScope fp16(Precision::FP16);
  Tensor<float> y = random_tensor<float>({33, 65}, 64);
  const Tensor<float> x = random_tensor<float>({33, 65}, 65);
  op::LowPrecisionCache cache;
  cache.get<half>(y);
  cache.axpby(-0.01f, x, 0.999f, y);
  EXPECT_EQ(cache.fused_updates(), 1u);
  const std::vector<half> got = cache.get<half>(y).to_vector();
  EXPECT_EQ(cache.casts(), 1u) << "the update left the copy current";
  const std::vector<half> want = y.cast<half>().to_vector();
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i].bits, want[i].bits) << i;
  // Under bf16 the same cache does not fuse into its half copy: the GEMMs read bf16.
  const autocast::AutocastScope bf16(Precision::BF16);
  cache.axpby(-0.01f, x, 0.999f, y);
  EXPECT_EQ(cache.fused_updates(), 1u);
}

TEST(Bf16Training, SgdOnTheMlpLowersTheLossAsInFloat) {
  // Not an accuracy claim (bench/mixed_precision_accuracy does that), only
  // that training through every bf16 path moves the loss like float does.
  auto run = [](Precision p, int steps) {
    Mlp m = make_mlp();
    autocast::AutocastScope scope(p);
    optimizer::GradientDescent<float> sgd(1.0);
    for (int s = 0; s < steps; ++s) sgd.minimize(m.loss, {m.w1, m.b1, m.w2});
    return static_cast<double>(m.loss->eval()->get(std::int64_t{0}));
  };
  const double start = run(Precision::FP32, 0);
  const double f32 = run(Precision::FP32, 100), bf16 = run(Precision::BF16, 100);
  EXPECT_LT(f32, 0.7 * start);
  EXPECT_NEAR(bf16, f32, 0.05 * (start - f32)) << "start " << start;
}

}  // namespace
