// Precision fp16 and bf16 on the GPU, the parts beyond bf16 GEMMs
// (test_bf16_cuda.cpp): fp16 GEMMs (cublasGemmEx, half operands, float
// accumulation and output), plain and with bias and activation; bf16 and
// fp16 convolutions through cuDNN, all three passes; and a short fp16
// training run whose loss scaler meets real half overflows.
//
// Each op is checked against a double reference computed on the host from
// the same float inputs, within tests/support/rounding_bound.h's bound for
// the format's unit roundoff (2^-8 bf16, 2^-11 half) and the reduction
// length K: the worst case (2u + u^2 + gamma_K) sum |a b| and 6 standard
// deviations of the statistical error, u sqrt(2/3) sqrt(sum (a b)^2). The
// convolutions' results are written by cuDNN in the operands' type, which
// adds one rounding of the result (out_u = u). Half operands below its
// normal range (6.1e-5) are rounded to an absolute 2^-25, not a relative u;
// with operands of magnitude at most 2, each of the K products then carries
// at most 2 * 2 * 2^-25 = 2^-23 more, so half's bounds add K 2^-23 + 2^-25
// (the last for the result's own rounding in the convolutions).
//
// Every case needs a GPU and skips without one, saying why. None has run on
// a GPU yet: they were written and compiled on a machine without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn.h"
#include "magmadnn/compute/autocast.h"
#include "magmadnn/conv/conv.h"
#include "magmadnn/conv/conv_mixed.h"
#include "magmadnn/optimizer/loss_scaler.h"
#include "magmadnn/tensor/math.h"
#include "support/gpu.h"
#include "support/gradcheck.h"
#include "support/shapes.h"
#include "support/rounding_bound.h"

using namespace magmadnn;
using magmadnn::testing::random_tensor;
using test::abs_of;
using test::square_of;
using test::ConvCase;
using test::GemmCase;

namespace {

Tensor<double> to_double(const Tensor<float>& t) { return t.cast<double>(); }

// A host float tensor's low-precision copy on the device, cast there (as a
// run casts its operands).
template <typename L>
Tensor<L> on_device(const Tensor<float>& t) {
  return t.to(DEVICE).template cast<L>();
}

// The bound of rounding_bound.h for L, with K-term products of operands of
// magnitude at most 2; `rounded_result` when the result is written in L.
template <typename L>
test::RoundingBound bound_for(std::int64_t k, bool rounded_result) {
  test::RoundingBound b;
  const bool is_half = std::is_same_v<L, half>;
  b.u = is_half ? test::kHalfRoundoff : test::kBf16Roundoff;
  b.out_u = rounded_result ? b.u : 0.0;
  if (is_half) b.absolute = double(k) * std::ldexp(1.0, -23) + std::ldexp(1.0, -25);
  return b;
}

}  // namespace

// -- fp16 GEMMs ---------------------------------------------------------------------------

class Fp16GemmGpu : public ::testing::TestWithParam<GemmCase> {};

TEST_P(Fp16GemmGpu, MatmulWithinHalfRoundingBound) {
  MAGMADNN_REQUIRE_GPU();
  const GemmCase c = GetParam();
  const Shape sa = c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k};
  const Shape sb = c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n};
  const Tensor<float> a = random_tensor<float>(sa, 11 + c.k, -2.0, 2.0);
  const Tensor<float> b = random_tensor<float>(sb, 12 + c.n, -1.0, 1.0);
  const Tensor<float> got = math::matmul_mixed(on_device<half>(a), on_device<half>(b), c.ta, c.tb);
  EXPECT_TRUE(got.on_device());
  const Tensor<float> f32 = math::matmul(a, b, c.ta, c.tb);
  const Tensor<double> da = to_double(a), db = to_double(b);
  test::expect_within_rounding_bound(got, math::matmul(da, db, c.ta, c.tb),
                                     math::matmul(abs_of(da), abs_of(db), c.ta, c.tb),
                                     math::matmul(square_of(da), square_of(db), c.ta, c.tb), c.k,
                                     bound_for<half>(c.k, false), &f32);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Fp16GemmGpu, ::testing::ValuesIn(test::gemm_cases()));

// The fused form a fully connected layer uses, act(x W^T + b) with half x and
// W and a float bias, for activations cuBLASLt has as an epilogue (ReLU) and
// one it has not (sigmoid). The activations are 1-Lipschitz and the bias is
// added in float, so the product's bound holds after them.
TEST(Fp16GemmGpu, LinearWithBiasAndActivationWithinHalfRoundingBound) {
  MAGMADNN_REQUIRE_GPU();
  const std::int64_t batch = 100, in = 784, out = 528;
  const Tensor<float> x = random_tensor<float>({batch, in}, 21, 0.0, 1.0);
  const Tensor<float> w = random_tensor<float>({out, in}, 22, -0.1, 0.1);
  const Tensor<float> bias = random_tensor<float>({out}, 23, -0.5, 0.5);
  const Tensor<float> bias_d = bias.to(DEVICE);
  const Tensor<double> dx = to_double(x), dw = to_double(w), dbias = to_double(bias);
  const Tensor<double> abs_sum = math::matmul(abs_of(dx), abs_of(dw), false, true);
  const Tensor<double> sq_sum = math::matmul(square_of(dx), square_of(dw), false, true);
  for (const UnaryOp act : {UnaryOp::Relu, UnaryOp::Sigmoid, UnaryOp::Identity}) {
    Tensor<float> got({batch, out}, DEVICE), f32({batch, out}, HOST);
    math::linear_mixed(on_device<half>(x), on_device<half>(w), &bias_d, act, 0.f, got);
    math::linear(x, w, &bias, act, 0.f, f32);
    Tensor<double> ref({batch, out}, HOST);
    math::linear(dx, dw, &dbias, act, 0.0, ref);
    SCOPED_TRACE(op_name(act));
    test::expect_within_rounding_bound(got, ref, abs_sum, sq_sum, in, bound_for<half>(in, false),
                                       act == UnaryOp::Sigmoid ? nullptr : &f32);
  }
}

// W = beta W + alpha dz^T x (the GEMM with beta): W stays float and only the
// product carries half's error, scaled by |alpha|.
TEST(Fp16GemmGpu, AccumulatesIntoFloatWithBeta) {
  MAGMADNN_REQUIRE_GPU();
  const std::int64_t batch = 64, in = 300, out = 200;
  const Tensor<float> dz = random_tensor<float>({batch, out}, 31);
  const Tensor<float> x = random_tensor<float>({batch, in}, 32, 0.0, 1.0);
  const Tensor<float> w0 = random_tensor<float>({out, in}, 33, -0.1, 0.1);
  const float alpha = -0.05f, beta = 0.999f;
  Tensor<float> w = w0.to(DEVICE);
  math::matmul_mixed(alpha, on_device<half>(dz), true, on_device<half>(x), false, beta, w);
  Tensor<double> ref = to_double(w0);
  math::matmul(double(alpha), to_double(dz), true, to_double(x), false, double(beta), ref);
  test::RoundingBound b = bound_for<half>(batch, false);
  b.scale = std::abs(alpha);
  b.absolute *= b.scale;
  test::expect_within_rounding_bound(w, ref, math::matmul(abs_of(to_double(dz)), abs_of(to_double(x)), true, false),
                                     math::matmul(square_of(to_double(dz)), square_of(to_double(x)), true, false),
                                     batch, b);
}

// -- bf16 and fp16 convolutions ---------------------------------------------------------------

namespace {

// The three passes of one problem in L on the device, against the host's
// double direct convolution.
template <typename L>
void check_three_passes(const ConvCase& c) {
  const std::int64_t cg = c.c / c.geom.groups;
  const Tensor<float> x = random_tensor<float>({c.n, c.c, c.h, c.w}, 41, 0.0, 1.0);
  const Tensor<float> w = random_tensor<float>({c.k, cg, c.r, c.r}, 42, -0.5, 0.5);
  const Tensor<float> bias = random_tensor<float>({c.k}, 43);
  const Tensor<float> bias_d = bias.to(DEVICE);
  const Tensor<double> dx = to_double(x), dw = to_double(w), dbias = to_double(bias);
  const auto direct = conv::Algo::Direct;
  const Tensor<L> x16 = on_device<L>(x), w16 = on_device<L>(w);

  // Forward: each output sums K = C/G * R * S products.
  const std::int64_t kf = cg * c.r * c.r;
  const Tensor<float> y = conv::conv2d_forward_mixed(x16, w16, &bias_d, c.geom);
  ASSERT_TRUE(y.on_device());
  const Tensor<float> y_f32 = conv::conv2d_forward(x, w, &bias, c.geom);
  {
    SCOPED_TRACE("forward");
    // cuDNN rounds the convolution to L before the bias is added in float.
    const Tensor<double> unbiased = conv::conv2d_forward<double>(dx, dw, nullptr, c.geom, direct);
    test::expect_within_rounding_bound(
        y, conv::conv2d_forward(dx, dw, &dbias, c.geom, direct),
        conv::conv2d_forward<double>(abs_of(dx), abs_of(dw), nullptr, c.geom, direct),
        conv::conv2d_forward<double>(square_of(dx), square_of(dw), nullptr, c.geom, direct), kf,
        bound_for<L>(kf, true), &y_f32, &unbiased);
  }

  // Backward data: each dx sums at most K/G * R * S products.
  const std::int64_t kd = c.k / c.geom.groups * c.r * c.r;
  const Tensor<float> dy = random_tensor<float>(y.shape(), 44);
  const Tensor<double> ddy = to_double(dy);
  const Tensor<L> dy16 = on_device<L>(dy);
  {
    SCOPED_TRACE("backward data");
    const Tensor<float> gx = conv::conv2d_backward_data_mixed(dy16, w16, x.shape(), c.geom);
    test::expect_within_rounding_bound(
        gx, conv::conv2d_backward_data(ddy, dw, x.shape(), c.geom, direct),
        conv::conv2d_backward_data(abs_of(ddy), abs_of(dw), x.shape(), c.geom, direct),
        conv::conv2d_backward_data(square_of(ddy), square_of(dw), x.shape(), c.geom, direct), kd,
        bound_for<L>(kd, true));
  }

  // Backward filter: each dw sums N * P * Q products.
  const std::int64_t kw = c.n * y.shape()[2] * y.shape()[3];
  Tensor<float> gb;
  const Tensor<float> gw = conv::conv2d_backward_filter_mixed(x16, dy16, w.shape(), c.geom, &gb);
  Tensor<double> db_ref;
  const Tensor<double> gw_ref = conv::conv2d_backward_filter(dx, ddy, w.shape(), c.geom, direct, &db_ref);
  {
    SCOPED_TRACE("backward filter");
    test::expect_within_rounding_bound(
        gw, gw_ref, conv::conv2d_backward_filter(abs_of(dx), abs_of(ddy), w.shape(), c.geom, direct),
        conv::conv2d_backward_filter(square_of(dx), square_of(ddy), w.shape(), c.geom, direct), kw,
        bound_for<L>(kw, true));
  }
  // db sums dy as rounded to L, accumulated in float and written in L: the
  // rounding of each term (u sum |dy|), the accumulation, and the result's.
  const test::RoundingBound b = bound_for<L>(kw, true);
  const Tensor<double> db_abs = math::sum(math::sum(math::sum(abs_of(ddy), 3), 2), 0);
  const std::vector<float> g = gb.to(HOST).to_vector();
  const std::vector<double> r = db_ref.to_vector(), a = db_abs.to_vector();
  ASSERT_EQ(g.size(), r.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double inner = (b.u + test::gamma_f32(kw)) * a[i] + b.absolute;
    EXPECT_LE(std::abs(g[i] - r[i]), inner + b.out_u * (std::abs(r[i]) + inner)) << "db " << i;
  }
}

// The CPU's cases and a wide one, sized for the tensor cores.
std::vector<test::ConvCase> gpu_conv_cases() {
  std::vector<test::ConvCase> v = test::conv_cases();
  v.push_back(test::ConvCase{8, 64, 16, 16, 64, 3, test::conv_geometry(1, 1)});
  return v;
}   // wide: tensor-core sized

}  // namespace

class Bf16ConvGpu : public ::testing::TestWithParam<ConvCase> {};
TEST_P(Bf16ConvGpu, ThreePassesWithinBf16RoundingBound) {
  MAGMADNN_REQUIRE_GPU();
  check_three_passes<bfloat16>(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Shapes, Bf16ConvGpu, ::testing::ValuesIn(gpu_conv_cases()));

class Fp16ConvGpu : public ::testing::TestWithParam<ConvCase> {};
TEST_P(Fp16ConvGpu, ThreePassesWithinHalfRoundingBound) {
  MAGMADNN_REQUIRE_GPU();
  check_three_passes<half>(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Shapes, Fp16ConvGpu, ::testing::ValuesIn(gpu_conv_cases()));

// Host half convolution is refused with its reason, not computed in float.
TEST(Fp16ConvGpu, HostHalfConvolutionIsRefused) {
  const Tensor<float> x = random_tensor<float>({1, 2, 6, 6}, 1), w = random_tensor<float>({3, 2, 3, 3}, 2);
  EXPECT_THROW(conv::conv2d_forward_mixed(x.cast<half>(), w.cast<half>(), nullptr), NotSupportedError);
}

// -- fp16 training with loss scaling -----------------------------------------------------------

namespace {

// What a 32-64-4 MLP on the device learned (batch 32, SGD at 0.5, seed 3):
// four classes, each the group of eight features with the largest sum.
struct SmallRun {
  model::History history;
  std::vector<std::vector<float>> before, after;  // every parameter, on the host
  std::vector<optimizer::LossScaler::Skip> skips, logged;
  std::int64_t steps = 0;
  bool half_copy = false;  // a weight holds a half copy: the GEMMs ran in fp16
};

SmallRun train_small_mlp(Precision precision, const optimizer::LossScaler::Options* scaling, unsigned epochs) {
  set_seed(3);
  const std::int64_t n = 256, in = 32, classes = 4;
  const Tensor<float> x = random_tensor<float>({n, in}, 71, 0.0, 1.0);
  Tensor<float> y({n, classes}, {ZERO}, HOST);
  const std::vector<float> xv = x.to_vector();
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t best = 0;
    double best_sum = -1;
    for (std::int64_t c = 0; c < classes; ++c) {
      double s = 0;
      for (std::int64_t j = c * 8; j < (c + 1) * 8; ++j) s += xv[static_cast<std::size_t>(i * in + j)];
      if (s > best_sum) best_sum = s, best = c;
    }
    y.set({i, best}, 1.0f);
  }
  layer::reset_layer_names();
  auto input = layer::input<float>({-1, in}, DEVICE);
  auto fc1 = layer::fullyconnected(input->out(), 64);
  auto a1 = layer::activation(fc1->out(), layer::SIGMOID);
  auto fc2 = layer::fullyconnected(a1->out(), classes);
  auto a2 = layer::activation(fc2->out(), layer::SOFTMAX);
  auto out = layer::output(a2->out());
  model::NeuralNetwork<float> net({input.ptr(), fc1.ptr(), a1.ptr(), fc2.ptr(), a2.ptr(), out.ptr()},
                                  optimizer::CROSS_ENTROPY, optimizer::SGD, {32, epochs, 0.5});
  SmallRun r;
  for (const auto& p : net.parameters()) r.before.push_back(p->value().to(HOST).to_vector());
  model::FitOptions<float> o;
  if (scaling != nullptr) {
    o.loss_scaler = std::make_shared<optimizer::LossScaler>(*scaling);
    o.loss_scaler->set_on_skip([&r](const optimizer::LossScaler::Skip& s) { r.logged.push_back(s); });
  }
  {
    const autocast::AutocastScope scope(precision);
    r.history = net.fit(x, y, o);
  }
  if (o.loss_scaler) r.skips = o.loss_scaler->skips();
  r.steps = net.optimizer().step_count();
  for (const auto& p : net.parameters()) {
    r.after.push_back(p->value().to(HOST).to_vector());
    r.half_copy = r.half_copy || p->low_precision_cache().held() == dtype::f16;
  }
  return r;
}

std::string losses_of(const model::History& h) {
  std::string s;
  for (const auto& e : h) s += " " + std::to_string(e.train_loss);
  return s;
}

}  // namespace

// Loss-scaled fp16 steps that do not overflow (a fixed scale of 2^10) move
// every parameter as float steps do. Each weight gradient is a sum of 32
// products of half operands accumulated in float: relative to the sum of
// the terms' magnitudes its error is at most about 2u = 2^-10 per operand
// rounding, so over 8 steps the update of each tensor stays within a few
// percent of float's in length and direction (0.98 cosine leaves room for
// the sigmoid's and softmax's own half rounding of activations).
TEST(Fp16TrainingGpu, ScaledStepsMoveTheWeightsAsFloatStepsDo) {
  MAGMADNN_REQUIRE_GPU();
  optimizer::LossScaler::Options lo;
  lo.init_scale = lo.max_scale = 1024.0;
  lo.growth_interval = 1000;
  const SmallRun f32 = train_small_mlp(Precision::FP32, nullptr, 1);
  const SmallRun f16 = train_small_mlp(Precision::FP16, &lo, 1);
  ASSERT_EQ(f16.skips.size(), 0u) << "a scale of 2^10 must not overflow half here";
  ASSERT_EQ(f16.steps, f32.steps);
  EXPECT_TRUE(f16.half_copy) << "no weight has a half copy: the GEMMs did not run in fp16";
  ASSERT_EQ(f16.before, f32.before) << "both runs start from the same weights";
  for (std::size_t p = 0; p < f32.after.size(); ++p) {
    double dot = 0, n32 = 0, n16 = 0;
    for (std::size_t i = 0; i < f32.after[p].size(); ++i) {
      const double d32 = double(f32.after[p][i]) - f32.before[p][i];
      const double d16 = double(f16.after[p][i]) - f16.before[p][i];
      dot += d32 * d16, n32 += d32 * d32, n16 += d16 * d16;
    }
    ASSERT_GT(n32, 0) << "parameter " << p << " did not move in float";
    EXPECT_GT(dot / std::sqrt(n32 * n16), 0.98) << "parameter " << p << ": fp16 update points elsewhere";
    EXPECT_NEAR(std::sqrt(n16 / n32), 1.0, 0.05) << "parameter " << p << ": fp16 update of another length";
  }
}

// The same MLP at fp16 with a loss scaler that starts at 2^24. At the first
// step the seed of backward is 2^24 / 32 per unit of (p - y), and |p - y|
// reaches 3/4 at initialisation with 4 classes: about 4e5, beyond half's
// 65504, so the half copy of the output gradient is inf and the step must
// be skipped. Each skip halves the scale until the gradients fit: by 2^21
// they do, 2^21 / 32 = 65536 per unit of |p - y|, which stays well below 1
// while p is near uniform (skipped steps leave the weights at their initial
// values), so below half's largest finite value 65504. Then steps succeed:
// the run recovers, and it learns what the float run learns.
TEST(Fp16TrainingGpu, OverflowingStepsAreSkippedTheScaleHalvesAndTrainingRecovers) {
  MAGMADNN_REQUIRE_GPU();
  optimizer::LossScaler::Options lo;
  lo.init_scale = lo.max_scale = 16777216.0;  // 2^24
  lo.growth_interval = 4;
  const unsigned epochs = 6;  // 48 steps
  const SmallRun r = train_small_mlp(Precision::FP16, &lo, epochs);
  const SmallRun f32 = train_small_mlp(Precision::FP32, nullptr, epochs);

  ASSERT_EQ(r.history.size(), epochs);
  const auto& skips = r.skips;
  ASSERT_GE(skips.size(), 1u) << "a scale of 2^24 must overflow half at the first step";
  EXPECT_EQ(skips.front().step, 1);
  ASSERT_EQ(r.logged.size(), skips.size()) << "every skip is reported";
  for (const auto& s : skips) EXPECT_EQ(s.scale_after, s.scale_before / 2) << "step " << s.step;
  // The first run of skips (steps 1, 2, ...) ends by 2^21 at the latest; the
  // step after it succeeds. Later skips, after the scale has grown back, may
  // come and go.
  std::size_t first_run = 1;
  while (first_run < skips.size() && skips[first_run].step == static_cast<std::int64_t>(first_run) + 1) ++first_run;
  EXPECT_LE(skips[first_run - 1].scale_after, std::ldexp(1.0, 21)) << "the scale halved until half held the gradients";
  const std::int64_t total = 8 * static_cast<std::int64_t>(epochs);
  EXPECT_LT(static_cast<std::int64_t>(first_run), total) << "every step overflowed: training never recovered";
  EXPECT_EQ(r.steps, total - static_cast<std::int64_t>(skips.size()));
  // Learning: the float run's loss falls over these epochs; the fp16 run's,
  // which lost only the skipped steps, falls as well.
  ASSERT_LT(f32.history.back().train_loss, f32.history.front().train_loss)
      << "the float run itself does not learn here:" << losses_of(f32.history);
  EXPECT_LT(r.history.back().train_loss, r.history.front().train_loss)
      << "fp16 losses" << losses_of(r.history) << "; float losses" << losses_of(f32.history) << "; "
      << skips.size() << " of " << total << " steps skipped";
  for (const auto& p : r.after)
    for (float v : p) ASSERT_TRUE(std::isfinite(v));
  EXPECT_TRUE(r.half_copy) << "no weight has a half copy: the GEMMs did not run in fp16";
}
