// The channels-last (NHWC) layout of bf16 runs (conv/layout.h's
// kChannelsLast): oneDNN's bf16 convolutions computed in it give what they
// give in NCHW, in all three passes and where x and y are in different
// layouts (a stem reading the NCHW image); and a small residual network
// under bf16 autocast keeps the layout between its layers and gives the
// values and gradients of its NCHW twin.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "magmadnn/compute/autocast.h"
#include "magmadnn/compute/blocked_output.h"
#include "magmadnn/compute/compute.h"
#include "magmadnn/conv/conv_bf16.h"
#include "magmadnn/conv/layout.h"
#include "support/gradcheck.h"

using namespace magmadnn;
using magmadnn::testing::random_tensor;

namespace {

constexpr int kLast = conv::kChannelsLast;

// a and b agree within rtol of the larger magnitude (plus atol).
::testing::AssertionResult close(const std::vector<float>& a, const std::vector<float>& b, double rtol, double atol) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes " << a.size() << " vs " << b.size();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = b[i];
    if (!(std::abs(x - y) <= atol + rtol * std::max(std::abs(x), std::abs(y)))) {
      return ::testing::AssertionFailure() << "element " << i << ": " << x << " vs " << y;
    }
  }
  return ::testing::AssertionSuccess();
}

// `t` (plain NCHW float) in layout `to`, as bf16.
Tensor<bfloat16> low_in(const Tensor<float>& t, int to) {
  Tensor<float> scratch;
  return conv::in_layout(t, 0, to, scratch).cast<bfloat16>();
}
// `t` (float, in layout `from`) in NCHW.
std::vector<float> plain(const Tensor<float>& t, int from) {
  Tensor<float> scratch;
  return conv::in_layout(t, from, 0, scratch).to_vector();
}

struct Problem {
  Shape x, w;
  conv::ConvParams p;
  int x_layout;  // the image of a stem stays NCHW
};

}  // namespace

// The same bf16 operands in either layout: the products are exact in float
// and only the order of the float sums differs.
TEST(ChannelsLast, Bf16ConvolutionsGiveWhatTheyGiveInNchw) {
  conv::ConvParams same, stride2, stem;
  same.pad_h = same.pad_w = 1;
  stride2.stride_h = stride2.stride_w = 2;
  stem.pad_h = stem.pad_w = 3, stem.stride_h = stem.stride_w = 2;
  for (const Problem& c : {Problem{{2, 32, 9, 7}, {16, 32, 3, 3}, same, kLast},
                           Problem{{2, 32, 9, 9}, {48, 32, 1, 1}, stride2, kLast},
                           Problem{{3, 32, 5, 7}, {48, 32, 1, 1}, {}, kLast},  // the filter pass as a matmul
                           Problem{{2, 3, 15, 15}, {16, 3, 7, 7}, stem, 0}}) {
    SCOPED_TRACE(::testing::Message() << "x " << c.x << " w " << c.w << " x layout " << c.x_layout);
    const conv::ConvProblem pr = conv::make_problem(c.x, c.w, c.p);
    const Tensor<float> x = random_tensor<float>(c.x, 1), w = random_tensor<float>(c.w, 2);
    const Tensor<float> dy = random_tensor<float>(pr.y_shape(), 3), bias = random_tensor<float>({pr.k}, 4);
    const Tensor<bfloat16> w16 = w.cast<bfloat16>();
    const conv::Blocks last{c.x_layout, kLast};
    const Tensor<float> y0 = conv::conv2d_forward_bf16(low_in(x, 0), w16, &bias, c.p);
    const Tensor<float> y1 = conv::conv2d_forward_bf16(low_in(x, c.x_layout), w16, &bias, c.p, last);
    EXPECT_TRUE(close(plain(y1, kLast), y0.to_vector(), 1e-5, 1e-5)) << "y";
    const Tensor<float> dx0 = conv::conv2d_backward_data_bf16(low_in(dy, 0), w16, c.x, c.p);
    const Tensor<float> dx1 = conv::conv2d_backward_data_bf16(low_in(dy, kLast), w16, c.x, c.p, last);
    EXPECT_TRUE(close(plain(dx1, c.x_layout), dx0.to_vector(), 1e-5, 1e-5)) << "dx";
    Tensor<float> db0, db1;
    const Tensor<float> dw0 = conv::conv2d_backward_filter_bf16(low_in(x, 0), low_in(dy, 0), c.w, c.p, &db0);
    const Tensor<float> dw1 =
        conv::conv2d_backward_filter_bf16(low_in(x, c.x_layout), low_in(dy, kLast), c.w, c.p, &db1, last);
    EXPECT_TRUE(close(dw1.to_vector(), dw0.to_vector(), 1e-5, 1e-4)) << "dw (OIHW in both)";
    EXPECT_TRUE(close(db1.to_vector(), db0.to_vector(), 1e-5, 1e-4)) << "db";
    // Without a bias gradient (a 1x1 filter pass of stride 1 is then a matmul).
    const Tensor<float> dw2 =
        conv::conv2d_backward_filter_bf16(low_in(x, c.x_layout), low_in(dy, kLast), c.w, c.p, nullptr, last);
    EXPECT_TRUE(close(dw2.to_vector(), dw0.to_vector(), 1e-5, 1e-4)) << "dw without db";
  }
  // Channel blocks other than channels last, and channels it cannot hold, are named.
  const Tensor<bfloat16> x16 = random_tensor<float>({1, 16, 4, 4}, 5).cast<bfloat16>();
  const Tensor<bfloat16> w16 = random_tensor<float>({24, 16, 1, 1}, 6).cast<bfloat16>();
  EXPECT_THROW(conv::conv2d_forward_bf16(x16, w16, nullptr, {}, {16, 16}), ValueError);
  EXPECT_THROW(conv::conv2d_forward_bf16(x16, w16, nullptr, {}, {kLast, kLast}), ValueError);  // 24 outputs
}

namespace {

op::Var<float> param(const std::string& name, const Shape& s, std::uint64_t seed, double lo = -0.3,
                     double hi = 0.3) {
  auto v = op::var<float>(name, s, {NONE}, HOST);
  v->set_value(random_tensor<float>(s, seed, lo, hi));
  return v;
}

struct Outcome {
  std::vector<float> value;
  std::vector<std::vector<float>> grads;
  int stem_layout = 0, pooled_layout = 0;
};

// A residual network in small, as a ResNet: a stem convolution of the
// 3-channel image, bn + ReLU, 3x3 / 2 max pooling, a bottleneck-like block
// (1x1, 3x3, 1x1 against a 1x1 shortcut) with bn + skip + ReLU, global
// average pooling; a bf16 run of it, the layouts kept or not.
Outcome run_resnet_like(bool keep_layouts) {
  autocast::AutocastScope bf16(Precision::BF16);
  std::vector<op::Var<float>> params;
  auto w = [&](const Shape& s) {
    params.push_back(param("w" + std::to_string(params.size()), s, 40 + params.size()));
    return params.back();
  };
  auto bn = [&](const op::Expr<float>& in, std::int64_t c) {
    params.push_back(param("g" + std::to_string(params.size()), {c}, 60 + params.size(), 0.5, 1.5));
    auto g = params.back();
    return op::batchnorm(in, g, w({c}));
  };
  op::Var<float> x = op::var<float>("x", {2, 3, 18, 18}, {NONE}, HOST);
  x->set_value(random_tensor<float>(x->output().shape(), 3));
  conv::ConvParams same, stem;
  same.pad_h = same.pad_w = 1;
  stem.pad_h = stem.pad_w = 1, stem.stride_h = stem.stride_w = 2;
  conv::PoolParams mp;
  mp.kernel_h = mp.kernel_w = 3, mp.stride_h = mp.stride_w = 2, mp.pad_h = mp.pad_w = 1;
  auto stem_conv = op::conv2d(x, w({32, 3, 3, 3}), stem);
  auto pooled = op::pooling(op::relu(bn(stem_conv, 32)), mp);
  auto h = op::relu(bn(op::conv2d(pooled, w({16, 32, 1, 1})), 16));
  h = op::relu(bn(op::conv2d(h, w({16, 16, 3, 3}), same), 16));
  h = bn(op::conv2d(h, w({64, 16, 1, 1})), 64);
  auto out = op::relu(op::add(h, bn(op::conv2d(pooled, w({64, 32, 1, 1})), 64)));
  conv::PoolParams avg;
  avg.mode = conv::PoolMode::Average;
  avg.kernel_h = avg.kernel_w = avg.stride_h = avg.stride_w = 5;
  op::OptimizeOptions o;
  o.keep_blocked_layouts = keep_layouts;
  auto root = op::optimize(op::pooling(out, avg), o);
  Outcome r;
  r.value = root->eval()->to_vector();
  r.stem_layout = op::output_block_of(*stem_conv.get());
  r.pooled_layout = op::output_block_of(*pooled.get());
  auto loss = op::reduce_sum(op::product(root, op::constant<float>("R", random_tensor<float>(root->output().shape(), 9))));
  std::vector<op::Expr<float>> wrt(params.begin(), params.end());
  auto table = op::gradients(loss, wrt);
  for (const auto& v : wrt) r.grads.push_back(table.get(v)->to_vector());
  return r;
}

}  // namespace

TEST(ChannelsLast, ABf16ResidualNetworkKeepsTheLayoutAndMatchesItsNchwTwin) {
  conv::set_bf16_conv_policy(conv::Bf16ConvPolicy::Always);
  const Outcome nchw = run_resnet_like(false), kept = run_resnet_like(true);
  conv::set_bf16_conv_policy(conv::Bf16ConvPolicy::Timed);
  EXPECT_EQ(nchw.stem_layout, 0);
  // Channels last wherever oneDNN computes bf16 natively (and blocked layouts are on).
  EXPECT_EQ(kept.stem_layout, conv::low_precision_layout());
  EXPECT_EQ(kept.pooled_layout, conv::low_precision_layout());
  // Both compute with the same bf16 operands; the float sums' order and the
  // normalisations' kernels differ, and bf16 casts of values that differ
  // in their last float bits can round apart.
  EXPECT_TRUE(close(kept.value, nchw.value, 2e-2, 2e-3)) << "value";
  ASSERT_EQ(kept.grads.size(), nchw.grads.size());
  for (std::size_t i = 0; i < nchw.grads.size(); ++i) {
    EXPECT_TRUE(close(kept.grads[i], nchw.grads[i], 5e-2, 5e-3)) << "gradient " << i;
  }
}
