// oneDNN's channel-blocked layout kept between layers (conv/layout.h,
// compute/blocked_output.h): the reorders place every element where the
// layout's definition says, the blocked batch normalisation computes what
// the plain one does (forward and backward, float and double), the pass
// allows the layout only where every consumer reads it, and a small residual
// network gives the values and gradients of its NCHW twin.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "magmadnn/compute/blocked_output.h"
#include "magmadnn/compute/compute.h"
#include "magmadnn/conv/algorithm.h"
#include "magmadnn/conv/chooser.h"
#include "magmadnn/conv/conv.h"
#include "magmadnn/conv/layout.h"
#include "magmadnn/conv/pool_blocked.h"
#include "magmadnn/conv/winograd_blocked.h"
#include "magmadnn/tensor/math.h"
#include "magmadnn/tensor/math_blocked.h"
#include "support/gradcheck.h"

using namespace magmadnn;
using magmadnn::testing::random_tensor;

namespace {

// The layout's definition, written out independently of oneDNN: element
// (n, c, i) of {N, C, R} at ((n * C/B + c/B) * R + i) * B + c % B; for
// channels last (b == kChannelsLast), at (n * R + i) * C + c.
template <typename T>
Tensor<T> reorder_ref(const Tensor<T>& t, int b, bool to_blocked) {
  const Shape& s = t.shape();
  const std::int64_t n = s[0], c = s[1], r = s[2] * s[3];
  const std::vector<T> v = t.to_vector();
  std::vector<T> out(v.size());
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t ch = 0; ch < c; ++ch)
      for (std::int64_t p = 0; p < r; ++p) {
        const auto plain = static_cast<std::size_t>((i * c + ch) * r + p);
        const auto blocked = static_cast<std::size_t>(b == conv::kChannelsLast ? (i * r + p) * c + ch
                                                                                : ((i * (c / b) + ch / b) * r + p) * b + ch % b);
        if (to_blocked) {
          out[blocked] = v[plain];
        } else {
          out[plain] = v[blocked];
        }
      }
  return Tensor<T>::from_vector(s, out, HOST);
}
template <typename T>
Tensor<T> to_blocked_ref(const Tensor<T>& plain, int b) {
  return reorder_ref(plain, b, true);
}
template <typename T>
Tensor<T> to_plain_ref(const Tensor<T>& blocked, int b) {
  return reorder_ref(blocked, b, false);
}

template <typename T>
::testing::AssertionResult close(const std::vector<T>& a, const std::vector<T>& b, double rtol, double atol) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes " << a.size() << " vs " << b.size();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
    if (!(std::abs(x - y) <= atol + rtol * std::max(std::abs(x), std::abs(y)))) {
      return ::testing::AssertionFailure() << "element " << i << ": " << x << " vs " << y;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

TEST(BlockedLayout, ReordersPlaceEveryElementAsTheLayoutDefines) {
  const Tensor<float> x = random_tensor<float>({3, 32, 5, 7}, 1);
  for (int b : {8, 16, conv::kChannelsLast}) {
    SCOPED_TRACE(b);
    Tensor<float> blocked, back;
    const Tensor<float>& bl = conv::in_layout(x, 0, b, blocked);
    EXPECT_EQ(bl.shape(), x.shape());
    EXPECT_EQ(bl.to_vector(), to_blocked_ref(x, b).to_vector());
    EXPECT_EQ(conv::in_layout(bl, b, 0, back).to_vector(), x.to_vector());
    // Between two blocks, too.
    Tensor<float> other;
    const int o = b == 8 ? 16 : 8;
    EXPECT_EQ(conv::in_layout(bl, b, o, other).to_vector(), to_blocked_ref(x, o).to_vector());
    // The same layout is the tensor itself, not a copy.
    Tensor<float> unused;
    EXPECT_EQ(&conv::in_layout(x, 0, 0, unused), &x);
  }
  // Channels that do not fill whole blocks cannot be blocked.
  Tensor<float> s;
  EXPECT_THROW(conv::in_layout(random_tensor<float>({2, 12, 3, 3}, 2), 0, 8, s), ValueError);
  EXPECT_THROW(conv::in_layout(random_tensor<float>({2, 16, 3}, 3), 0, 8, s), ValueError);
  EXPECT_FALSE(conv::blockable(Shape({2, 12, 3, 3}), 8));
  EXPECT_TRUE(conv::blockable(Shape({2, 16, 3, 3}), 8));
  EXPECT_FALSE(conv::blockable(Shape({2, 16, 3, 3}), 0));
  // Channels last takes whole vectors of channels (kChannelsLastLanes).
  EXPECT_TRUE(conv::blockable(Shape({2, 48, 3, 3}), conv::kChannelsLast));
  EXPECT_FALSE(conv::blockable(Shape({2, 24, 3, 3}), conv::kChannelsLast));
  EXPECT_THROW(conv::in_layout(random_tensor<float>({2, 24, 3, 3}, 2), 0, conv::kChannelsLast, s), ValueError);
}

namespace {

// Blocked batch normalisation against the plain one on the same values.
template <typename T>
void check_batchnorm(int b, const Shape& s, bool skip_on, bool relu, bool training, double rtol, double atol) {
  SCOPED_TRACE(::testing::Message() << "shape " << s.to_string() << " block " << b << (skip_on ? " skip" : "")
                                    << (relu ? " relu" : "") << (training ? " training" : " inference"));
  const std::int64_t c = s[1], r = s[2] * s[3];
  // Channel means far from 0 and spreads that differ, as after a convolution.
  Tensor<T> x = random_tensor<T>(s, 11, -1.0, 1.0);
  auto xv = x.to_vector();
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = xv[i] * T(1 + (i / r) % 3) + T(((i / r) % c) * 0.5);
  x = Tensor<T>::from_vector(s, xv, HOST);
  const Tensor<T> skip = random_tensor<T>(s, 12), g = random_tensor<T>(s, 13);
  const Tensor<T> gamma = random_tensor<T>({c}, 14, 0.5, 1.5), beta = random_tensor<T>({c}, 15);
  const Tensor<T> rmean = random_tensor<T>({c}, 16), rvar = random_tensor<T>({c}, 17, 0.5, 2.0);
  const T eps = T(1e-5);
  const Tensor<T>* rm = training ? nullptr : &rmean;
  const Tensor<T>* rv = training ? nullptr : &rvar;

  Tensor<T> y(s, HOST), mean({c}, HOST), var({c}, HOST), inv({c}, HOST);
  math::batchnorm_forward(x, gamma, beta, skip_on ? &skip : nullptr, relu, eps, rm, rv, y, mean, var, inv);
  const Tensor<T> xb = to_blocked_ref(x, b), skipb = to_blocked_ref(skip, b), gb = to_blocked_ref(g, b);
  Tensor<T> yb(s, HOST), meanb({c}, HOST), varb({c}, HOST), invb({c}, HOST);
  math::batchnorm_forward_blocked(b, xb, gamma, beta, skip_on ? &skipb : nullptr, relu, eps, rm, rv, yb, meanb, varb,
                                  invb);
  EXPECT_TRUE(close(to_plain_ref(yb, b).to_vector(), y.to_vector(), rtol, atol)) << "y";
  EXPECT_TRUE(close(meanb.to_vector(), mean.to_vector(), rtol, atol)) << "mean";
  EXPECT_TRUE(close(varb.to_vector(), var.to_vector(), rtol, atol)) << "var";
  EXPECT_TRUE(close(invb.to_vector(), inv.to_vector(), rtol, atol)) << "invstd";

  // Every combination of wanted gradients, as the node asks for them.
  for (int want = 0; want < 4; ++want) {
    const bool want_dx = want & 1, want_dskip = want & 2;
    SCOPED_TRACE(::testing::Message() << "dx " << want_dx << " dskip " << want_dskip);
    Tensor<T> dx(s, HOST), dskip(s, HOST), dgamma({c}, HOST), dbeta({c}, HOST);
    math::batchnorm_backward(x, relu ? &y : nullptr, g, gamma, mean, inv, training, want_dx ? &dx : nullptr,
                             want_dskip ? &dskip : nullptr, dgamma, dbeta);
    Tensor<T> dxb(s, HOST), dskipb(s, HOST), dgammab({c}, HOST), dbetab({c}, HOST);
    math::batchnorm_backward_blocked(b, xb, relu ? &yb : nullptr, gb, gamma, meanb, invb, training,
                                     want_dx ? &dxb : nullptr, want_dskip ? &dskipb : nullptr, dgammab, dbetab);
    if (want_dx) EXPECT_TRUE(close(to_plain_ref(dxb, b).to_vector(), dx.to_vector(), rtol, atol)) << "dx";
    if (want_dskip) EXPECT_TRUE(close(to_plain_ref(dskipb, b).to_vector(), dskip.to_vector(), rtol, atol)) << "dskip";
    EXPECT_TRUE(close(dgammab.to_vector(), dgamma.to_vector(), rtol, atol)) << "dgamma";
    EXPECT_TRUE(close(dbetab.to_vector(), dbeta.to_vector(), rtol, atol)) << "dbeta";
  }
}

}  // namespace

// The plain kernels are checked against the composed ops and by gradcheck
// (test_math_batchnorm.cpp, test_gradcheck_ops.cpp); the blocked ones equal
// them, in double to the last bits of the sums' order.
TEST(BlockedLayout, BatchNormEqualsThePlainKernelsForwardAndBackward) {
  for (int b : {8, 16, conv::kChannelsLast}) {
    // Images of 12 pixels, and of 323: past one chunk of the sums (256
    // pixels), with an odd pixel at the end of each chunk's pairs. Channels
    // last: 48 channels (three vectors) and 16.
    const std::int64_t lanes = b == conv::kChannelsLast ? 16 : b;
    for (const Shape& s : {Shape{5, (b == conv::kChannelsLast ? 3 : 2) * lanes, 3, 4}, Shape{3, lanes, 17, 19}}) {
      for (bool skip : {false, true}) {
        for (bool relu : {false, true}) {
          for (bool training : {true, false}) {
            check_batchnorm<double>(b, s, skip, relu, training, 1e-11, 1e-12);
            check_batchnorm<float>(b, s, skip, relu, training, 2e-4, 2e-5);
          }
        }
      }
    }
  }
}

TEST(BlockedLayout, BatchNormRejectsWhatTheLayoutCannotHold) {
  const Tensor<float> x = random_tensor<float>({2, 12, 3, 3}, 1);
  const Tensor<float> gamma = random_tensor<float>({12}, 2), beta = random_tensor<float>({12}, 3);
  Tensor<float> y(x.shape(), HOST), m({12}, HOST), v({12}, HOST), inv({12}, HOST);
  EXPECT_THROW(math::batchnorm_forward_blocked<float>(8, x, gamma, beta, nullptr, false, 1e-5f, nullptr, nullptr, y, m, v,
                                               inv),
               ValueError);
}

// Global average pooling read from the blocked layout gives the plain
// pooling's values (both sum each channel in pixel order, in float) and
// its gradient, in the blocked layout; shapes that do not fit are named.
TEST(BlockedLayout, GlobalAveragePoolingReadsTheBlockedLayout) {
  for (int b : {8, 16, conv::kChannelsLast}) {
    const std::int64_t lanes = b == conv::kChannelsLast ? 16 : b;
    for (const Shape& s : {Shape{3, 2 * lanes, 5, 7}, Shape{2, lanes, 1, 1}}) {
      SCOPED_TRACE(::testing::Message() << "block " << b << " x " << s);
      conv::PoolParams p;
      p.mode = conv::PoolMode::Average;
      p.kernel_h = p.stride_h = s[2], p.kernel_w = p.stride_w = s[3];
      ASSERT_TRUE(conv::is_global_average(s, p));
      const Tensor<float> x = random_tensor<float>(s, 21), dy = random_tensor<float>({s[0], s[1], 1, 1}, 22);
      const Tensor<float> y = conv::pool2d_forward(x, p), dx = conv::pool2d_backward(x, dy, p);
      const Tensor<float> yb = conv::global_average_pool_blocked(to_blocked_ref(x, b), b);
      EXPECT_EQ(yb.shape(), y.shape());
      EXPECT_TRUE(close(yb.to_vector(), y.to_vector(), 1e-6, 1e-7)) << "y";
      const Tensor<float> dxb = conv::global_average_pool_blocked_backward(dy, s, b);
      EXPECT_TRUE(close(to_plain_ref(dxb, b).to_vector(), dx.to_vector(), 1e-6, 1e-7)) << "dx";
    }
  }
  conv::PoolParams p;
  p.mode = conv::PoolMode::Average;
  p.kernel_h = p.kernel_w = 4;
  EXPECT_TRUE(conv::is_global_average({2, 8, 4, 4}, p));
  EXPECT_FALSE(conv::is_global_average({2, 8, 5, 4}, p));  // a window smaller than the image
  p.pad_h = 1;
  EXPECT_FALSE(conv::is_global_average({2, 8, 4, 4}, p));
  p.pad_h = 0, p.mode = conv::PoolMode::Max;
  EXPECT_FALSE(conv::is_global_average({2, 8, 4, 4}, p));
  EXPECT_THROW(conv::global_average_pool_blocked(random_tensor<float>({2, 12, 3, 3}, 1), 8), ValueError);
  EXPECT_THROW(conv::global_average_pool_blocked_backward(random_tensor<float>({2, 8, 1, 2}, 1), {2, 8, 3, 3}, 8),
               ValueError);
}

// Max pooling on the blocked layout gives the plain pooling's values and
// gradient (the stem's 3x3 / 2 with padding 1, where windows overlap and
// hang over the edge; 2x2 / 2; a window of the whole image), with ties
// broken as the plain pooling breaks them (rows of equal values).
TEST(BlockedLayout, MaxPoolingReadsAndKeepsTheBlockedLayout) {
  struct Case {
    Shape x;
    std::int64_t k, stride, pad;
  };
  for (int b : {8, 16, conv::kChannelsLast}) {
    const std::int64_t l = b == conv::kChannelsLast ? 16 : b;
    for (const Case& c : {Case{Shape{3, 2 * l, 9, 7}, 3, 2, 1}, Case{Shape{2, l, 6, 6}, 2, 2, 0},
                          Case{Shape{2, l, 4, 5}, 4, 1, 0}, Case{Shape{1, l, 1, 1}, 3, 2, 1}}) {
      SCOPED_TRACE(::testing::Message() << "block " << b << " x " << c.x << " window " << c.k);
      conv::PoolParams p;
      p.mode = conv::PoolMode::Max;
      p.kernel_h = p.kernel_w = c.k, p.stride_h = p.stride_w = c.stride, p.pad_h = p.pad_w = c.pad;
      ASSERT_TRUE(conv::max_pool_blocked_supports(c.x, p, b));
      Tensor<float> x = random_tensor<float>(c.x, 31);
      float* xp = x.mutable_data();
      for (std::int64_t i = 0; i + 1 < x.size(); i += 5) xp[i + 1] = xp[i];  // ties
      Tensor<std::int32_t> am, am_b;
      const Tensor<float> y = conv::pool2d_forward(x, p, &am);
      const Tensor<float> dy = random_tensor<float>(y.shape(), 32);
      const Tensor<float> dx = conv::pool2d_backward(x, dy, p, &am);
      const Tensor<float> yb = conv::max_pool_blocked(to_blocked_ref(x, b), p, b, &am_b);
      ASSERT_EQ(yb.shape(), y.shape());
      EXPECT_TRUE(close(to_plain_ref(yb, b).to_vector(), y.to_vector(), 0.0, 0.0)) << "y";
      const Tensor<float> dxb = conv::max_pool_blocked_backward(to_blocked_ref(dy, b), am_b, c.x, p, b);
      EXPECT_TRUE(close(to_plain_ref(dxb, b).to_vector(), dx.to_vector(), 1e-6, 1e-7)) << "dx";
    }
  }
  conv::PoolParams p;
  p.kernel_h = p.kernel_w = 3, p.stride_h = p.stride_w = 2, p.pad_h = p.pad_w = 1;
  EXPECT_FALSE(conv::max_pool_blocked_supports({2, 12, 8, 8}, p, 8));  // channels do not fill blocks
  p.pad_h = 3;
  EXPECT_FALSE(conv::max_pool_blocked_supports({2, 8, 8, 8}, p, 8));  // a window could lie in the padding
  p.pad_h = 1, p.mode = conv::PoolMode::Average;
  EXPECT_FALSE(conv::max_pool_blocked_supports({2, 8, 8, 8}, p, 8));
  EXPECT_THROW(conv::max_pool_blocked(random_tensor<float>({2, 8, 8, 8}, 1), p, 8, nullptr), ValueError);
}

// -- the pass ----------------------------------------------------------------------------------------
namespace {

int blk() { return conv::blocked_layout_block(); }

template <typename T>
op::Var<T> param(const std::string& name, const Shape& s, std::uint64_t seed, double lo = -0.3, double hi = 0.3) {
  auto v = op::var<T>(name, s, {NONE}, HOST);
  v->set_value(random_tensor<T>(s, seed, lo, hi));
  return v;
}

// A residual network in small: conv -> bn+relu -> [conv -> bn+relu -> conv
// -> bn + skip + relu] -> stride-2 conv -> bn -> average pool -> the sum
// against fixed weights. Every activation has 16 channels.
struct Net {
  op::Var<float> x = op::var<float>("x", {4, 1, 8, 8}, {NONE}, HOST);
  std::vector<op::Var<float>> params;
  op::Expr<float> out, stem, block_in, last_bn;

  // `second`: the algorithm of the block's second convolution. `global`:
  // the pooling is a global average (4x4 window on the 4x4 image) rather
  // than 2x2 windows.
  explicit Net(conv::Algo second = conv::Algo::Auto, bool global = false) {
    x->set_value(random_tensor<float>(x->output().shape(), 1));
    conv::ConvParams same;
    same.pad_h = same.pad_w = 1;
    auto w = [&](const std::string& n, const Shape& s) {
      params.push_back(param<float>(n, s, 10 + params.size()));
      return params.back();
    };
    auto bn = [&](const op::Expr<float>& in, const std::string& n) {
      params.push_back(param<float>(n + "g", {16}, 30 + params.size(), 0.5, 1.5));
      auto g = params.back();
      params.push_back(param<float>(n + "b", {16}, 30 + params.size()));
      return op::batchnorm(in, g, params.back());
    };
    stem = op::conv2d(x, w("w0", {16, 1, 3, 3}), same);
    block_in = op::relu(bn(stem, "bn0"));
    auto h = op::relu(bn(op::conv2d(block_in, w("w1", {16, 16, 3, 3}), same), "bn1"));
    h = op::relu(op::add(bn(op::conv2d(h, w("w2", {16, 16, 3, 3}), same, second), "bn2"), block_in));
    conv::ConvParams down;
    down.stride_h = down.stride_w = 2;
    last_bn = bn(op::conv2d(h, w("w3", {16, 16, 1, 1}), down), "bn3");
    conv::PoolParams avg;
    avg.mode = conv::PoolMode::Average;
    if (global) avg.kernel_h = avg.kernel_w = avg.stride_h = avg.stride_w = 4;
    out = op::pooling(last_bn, avg);
  }
};

struct Result {
  std::vector<float> value;
  std::vector<std::vector<float>> grads;
};

Result run(Net& net, bool blocked) {
  op::OptimizeOptions o;
  o.keep_blocked_layouts = blocked;
  auto out = op::optimize(net.out, o);
  Result r;
  r.value = out->eval()->to_vector();
  auto weights = op::constant<float>("R", random_tensor<float>(out->output().shape(), 99));
  auto loss = op::reduce_sum(op::product(out, weights));
  std::vector<op::Expr<float>> wrt(net.params.begin(), net.params.end());
  wrt.push_back(net.x);
  auto table = op::gradients(loss, wrt);
  for (const auto& v : wrt) r.grads.push_back(table.get(v)->to_vector());
  return r;
}

}  // namespace

TEST(BlockedLayout, AResidualGraphGivesTheValuesAndGradientsOfItsNchwTwin) {
  if (blk() == 0) GTEST_SKIP() << "blocked layouts are off here (no AVX2, or MAGMADNN_BLOCKED_LAYOUT=0)";
  for (bool global : {false, true}) {
    SCOPED_TRACE(global ? "global average pooling" : "2x2 average pooling");
    Net plain_net(conv::Algo::Auto, global), blocked_net(conv::Algo::Auto, global);
    const Result plain = run(plain_net, false), blocked = run(blocked_net, true);
    EXPECT_TRUE(close(blocked.value, plain.value, 1e-4, 1e-5)) << "value";
    ASSERT_EQ(blocked.grads.size(), plain.grads.size());
    for (std::size_t i = 0; i < plain.grads.size(); ++i) {
      EXPECT_TRUE(close(blocked.grads[i], plain.grads[i], 2e-3, 2e-4)) << "gradient " << i;
    }
    // The layout was kept: the stem convolution and the block's input are
    // blocked; the NCHW twin blocked nothing. The last normalisation keeps
    // it only for a global average pooling, which reads it.
    EXPECT_EQ(op::output_block_of(*blocked_net.stem.get()), blk());
    EXPECT_EQ(op::output_block_of(*plain_net.stem.get()), 0);
    EXPECT_EQ(op::output_block_of(*blocked_net.last_bn.get()), global ? blk() : 0);
    // Read from outside the graph, a blocked node gives NCHW.
    EXPECT_TRUE(close(blocked_net.stem->eval()->to_vector(), plain_net.stem->eval()->to_vector(), 1e-4, 1e-5));
  }
}

TEST(BlockedLayout, ThePassAllowsTheLayoutOnlyWhereEveryConsumerReadsIt) {
  Net net;
  auto out = op::optimize(net.out);
  std::vector<std::string> allowed, refused;
  for (auto* n : op::topological_order(out.get())) {
    if (auto* b = dynamic_cast<op::BlockedOutput<float>*>(n)) {
      (b->blocked_output_allowed() ? allowed : refused).push_back(n->kind() + ":" + n->get_inputs()[0]->kind());
    }
  }
  // Allowed: the convolutions (read by batch normalisations), the stem's and
  // the block's normalisations (read by convolutions and as the skip).
  // Refused: the last normalisation, read by the (2x2 average) pooling,
  // and the pooling, the root.
  EXPECT_EQ(allowed.size(), 7u) << ::testing::PrintToString(allowed);
  ASSERT_EQ(refused.size(), 2u) << ::testing::PrintToString(refused);
  EXPECT_EQ(refused[0], "batchnorm:conv2d");
  EXPECT_EQ(refused[1], "average_pool:batchnorm");
  // A global average pooling reads it: nothing is refused.
  Net global_net(conv::Algo::Auto, true);
  auto global_out = op::optimize(global_net.out);
  EXPECT_TRUE(dynamic_cast<op::BlockedOutput<float>*>(global_net.last_bn.get())->blocked_output_allowed());

  // The root, and a node also read by an op that needs NCHW, stay NCHW.
  auto w = param<float>("w", {16, 16, 1, 1}, 5);
  auto c1 = op::conv2d(net.block_in, w);
  auto both = op::add(op::conv2d(c1, w), op::tanh(c1));
  op::keep_blocked_layouts(both);
  EXPECT_FALSE(dynamic_cast<op::BlockedOutput<float>*>(c1.get())->blocked_output_allowed());
  auto root = op::conv2d(c1, w);
  op::keep_blocked_layouts(root);
  EXPECT_TRUE(dynamic_cast<op::BlockedOutput<float>*>(c1.get())->blocked_output_allowed());
  EXPECT_FALSE(dynamic_cast<op::BlockedOutput<float>*>(root.get())->blocked_output_allowed());
}

// A ResNet stem in small: conv -> bn -> relu -> 3x3 / 2 max pooling ->
// two convolutions reading the pooled tensor -> bn + skip + relu. The
// optimized graph keeps the ReLU in the normalisation (it is not moved past
// the pooling), the pooling reads and keeps the blocked layout, and values
// and gradients are those of the NCHW twin.
TEST(BlockedLayout, AStemWithMaxPoolingKeepsTheLayoutThroughThePooling) {
  if (blk() == 0) GTEST_SKIP() << "blocked layouts are off here (no AVX2, or MAGMADNN_BLOCKED_LAYOUT=0)";
  auto build = [](std::vector<op::Var<float>>& params, op::Var<float>& x, op::Expr<float>& pool) {
    x->set_value(random_tensor<float>(x->output().shape(), 3));
    auto w = [&](const Shape& s) {
      params.push_back(param<float>("w" + std::to_string(params.size()), s, 40 + params.size()));
      return params.back();
    };
    auto bn = [&](const op::Expr<float>& in) {
      auto g = w({16});
      g->set_value(random_tensor<float>({16}, 60 + params.size(), 0.5, 1.5));
      return op::batchnorm(in, g, w({16}));
    };
    conv::ConvParams same;
    same.pad_h = same.pad_w = 1;
    conv::PoolParams mp;
    mp.kernel_h = mp.kernel_w = 3, mp.stride_h = mp.stride_w = 2, mp.pad_h = mp.pad_w = 1;
    pool = op::pooling(op::relu(bn(op::conv2d(x, w({16, 3, 3, 3}), same))), mp);
    auto a = bn(op::conv2d(pool, w({16, 16, 3, 3}), same));
    auto skip = bn(op::conv2d(pool, w({16, 16, 1, 1})));
    conv::PoolParams avg;
    avg.mode = conv::PoolMode::Average;
    avg.kernel_h = avg.kernel_w = avg.stride_h = avg.stride_w = 5;
    return op::pooling(op::relu(op::add(a, skip)), avg);
  };
  Result r[2];
  op::Expr<float> pools[2];
  for (int blocked : {0, 1}) {
    std::vector<op::Var<float>> params;
    op::Var<float> x = op::var<float>("x", {2, 3, 10, 9}, {NONE}, HOST);
    op::OptimizeOptions o;
    o.keep_blocked_layouts = blocked == 1;
    auto out = op::optimize(build(params, x, pools[blocked]), o);
    r[blocked].value = out->eval()->to_vector();
    auto loss = op::reduce_sum(op::product(out, op::constant<float>("R", random_tensor<float>(out->output().shape(), 9))));
    std::vector<op::Expr<float>> wrt(params.begin(), params.end());
    wrt.push_back(x);
    auto table = op::gradients(loss, wrt);
    for (const auto& v : wrt) r[blocked].grads.push_back(table.get(v)->to_vector());
    // The ReLU stayed in the normalisation, which the pooling reads.
    EXPECT_EQ(pools[blocked]->get_inputs()[0]->kind(), "batchnorm_relu");
  }
  EXPECT_EQ(op::output_block_of(*pools[1].get()), blk());
  EXPECT_EQ(op::output_block_of(*pools[1]->get_inputs()[0]), blk());
  EXPECT_EQ(op::output_block_of(*pools[0].get()), 0);
  EXPECT_TRUE(close(r[1].value, r[0].value, 1e-4, 1e-5)) << "value";
  ASSERT_EQ(r[1].grads.size(), r[0].grads.size());
  for (std::size_t i = 0; i < r[0].grads.size(); ++i) {
    EXPECT_TRUE(close(r[1].grads[i], r[0].grads[i], 2e-3, 2e-4)) << "gradient " << i;
  }
}

// A convolution whose algorithm is forced to one that reads NCHW takes its
// blocked input in NCHW and gives its gradient back blocked; the
// normalisation after it takes that NCHW input into its blocked output's
// layout and gives the gradient back in NCHW.
TEST(BlockedLayout, AForcedNchwAlgorithmReadsABlockedInput) {
  if (blk() == 0) GTEST_SKIP() << "blocked layouts are off here (no AVX2, or MAGMADNN_BLOCKED_LAYOUT=0)";
  Net plain_net, forced_net(conv::Algo::Im2colGemm);
  const Result plain = run(plain_net, false), forced = run(forced_net, true);
  EXPECT_TRUE(close(forced.value, plain.value, 1e-4, 1e-5)) << "value";
  for (std::size_t i = 0; i < plain.grads.size(); ++i) {
    EXPECT_TRUE(close(forced.grads[i], plain.grads[i], 2e-3, 2e-4)) << "gradient " << i;
  }
}

TEST(BlockedLayout, OnlyAlgorithmsThatReadTheLayoutsTakeABlockedProblem) {
  conv::ConvProblem pr = conv::make_problem(Shape({2, 16, 6, 6}), Shape({16, 16, 3, 3}), {});
  pr.x_block = pr.y_block = 8;
  EXPECT_NE(pr.to_string().find("blk8,8"), std::string::npos) << pr.to_string();
  const bool have_onednn = conv::find_algorithm<float>(conv::Algo::OneDNN, DeviceKind::CPU) != nullptr;
  // oneDNN and Winograd F(2x2) read it (and are timed against each other).
  for (const auto pass : {conv::Pass::Forward, conv::Pass::BackwardData, conv::Pass::BackwardFilter}) {
    const conv::Algo a = conv::choose<float>(pr, pass, DeviceKind::CPU, 0, conv::Algo::Auto).id();
    EXPECT_TRUE(a == conv::Algo::WinogradF2x2 || (have_onednn && a == conv::Algo::OneDNN)) << conv::algo_name(a);
  }
  EXPECT_THROW(conv::choose<float>(pr, conv::Pass::Forward, DeviceKind::CPU, 0, conv::Algo::WinogradF4x4),
               NotSupportedError);
  // The sliding kernel reads a blocked dy (with NCHW x) in the filter pass only.
  EXPECT_THROW(conv::choose<float>(pr, conv::Pass::BackwardFilter, DeviceKind::CPU, 0, conv::Algo::Sliding),
               NotSupportedError);
  conv::ConvParams pad1;
  pad1.pad_h = pad1.pad_w = 1;
  conv::ConvProblem stem = conv::make_problem(Shape({2, 1, 9, 9}), Shape({16, 1, 3, 3}), pad1);
  stem.y_block = 8;
  EXPECT_EQ(conv::choose<float>(stem, conv::Pass::BackwardFilter, DeviceKind::CPU, 0, conv::Algo::Sliding).id(),
            conv::Algo::Sliding);
  EXPECT_THROW(conv::choose<float>(stem, conv::Pass::Forward, DeviceKind::CPU, 0, conv::Algo::Sliding),
               NotSupportedError);
  EXPECT_THROW(conv::choose<float>(stem, conv::Pass::BackwardFilter, DeviceKind::CPU, 0, conv::Algo::Im2colGemm),
               NotSupportedError);
  const conv::Algo picked = conv::choose<float>(stem, conv::Pass::BackwardFilter, DeviceKind::CPU, 0).id();
  EXPECT_TRUE(picked == conv::Algo::Sliding || (have_onednn && picked == conv::Algo::OneDNN))
      << conv::algo_name(picked);
}

// The sliding filter pass on a blocked dy (block 8 and 16, NCHW x) gives
// what it gives on the same dy in NCHW, weights and bias gradient, in
// double and float, with one and two vectors of output channels and groups.
TEST(BlockedLayout, TheSlidingFilterPassReadsABlockedGradient) {
  auto aligned = [](std::vector<unsigned char>& v) {
    const auto addr = reinterpret_cast<std::uintptr_t>(v.data());
    return static_cast<void*>(v.data() + (64 - addr % 64) % 64);
  };
  auto check = [&](auto zero, const Shape& xs, const Shape& wshape, std::int64_t groups, int b) {
    using T = decltype(zero);
    conv::ConvParams geom;
    geom.pad_h = geom.pad_w = 1;
    geom.groups = groups;
    conv::ConvProblem pr = conv::make_problem(xs, wshape, geom);
    conv::ConvAlgorithm<T>& sl = *conv::find_algorithm<T>(conv::Algo::Sliding, DeviceKind::CPU);
    const Tensor<T> x = random_tensor<T>(pr.x_shape(), 3), dy = random_tensor<T>(pr.y_shape(), 4);
    std::vector<T> dw_ref(static_cast<std::size_t>(pr.w_shape().numel())), db_ref(static_cast<std::size_t>(pr.k));
    std::vector<unsigned char> ws_ref(sl.workspace_bytes(pr, conv::Pass::BackwardFilter) + 64);
    sl.backward_filter(pr, x.data(), dy.data(), dw_ref.data(), db_ref.data(), aligned(ws_ref));
    pr.y_block = b;
    const std::string what = pr.to_string() + (sizeof(T) == 8 ? " double" : " float");
    ASSERT_TRUE(sl.reads_blocked(pr, conv::Pass::BackwardFilter)) << what;
    EXPECT_FALSE(sl.reads_blocked(pr, conv::Pass::Forward)) << what;
    const Tensor<T> dyb = to_blocked_ref(dy, b);
    std::vector<T> dw(dw_ref.size(), T(7)), db(db_ref.size(), T(7));
    std::vector<unsigned char> ws(sl.workspace_bytes(pr, conv::Pass::BackwardFilter) + 64);
    sl.backward_filter(pr, x.data(), dyb.data(), dw.data(), db.data(), aligned(ws));
    EXPECT_TRUE(close(dw, dw_ref, 0.0, 0.0)) << "weight gradient, " << what;  // the same sums in the same order
    EXPECT_TRUE(close(db, db_ref, 1e-6, 1e-9)) << "bias gradient, " << what;
    conv::ConvProblem both = pr;
    both.x_block = b;
    EXPECT_FALSE(sl.reads_blocked(both, conv::Pass::BackwardFilter)) << "x blocked too, " << what;
  };
  for (const int b : {8, 16}) {
    for (const bool dbl : {true, false}) {
      auto run = [&](const Shape& xs, const Shape& ws, std::int64_t groups) {
        if (dbl) {
          check(0.0, xs, ws, groups, b);
        } else {
          check(0.0f, xs, ws, groups, b);
        }
      };
      run(Shape({3, 1, 12, 12}), Shape({16, 1, 3, 3}), 1);  // resnet's stem
      run(Shape({2, 3, 7, 9}), Shape({32, 3, 3, 3}), 1);    // two vectors of output channels
      run(Shape({2, 4, 6, 6}), Shape({16, 2, 3, 3}), 2);    // groups: half a vector each
    }
  }
}

// Winograd F(2x2, 3x3) reads the blocked layouts in all three passes (the
// fused kernels of conv/winograd_blocked.h): against the direct
// reference on the same values in NCHW, for blocks 8 and 16, channel counts
// of one to eight vectors (so a last group of 8 output channels, not 16),
// images whose tiles overhang (odd sizes, 1 x 1), padding 0 to 2, a batch
// whose tiles end inside a task, bias and the fused ReLU; with the AVX2 and
// the baseline builds of the kernels. F(4x4), groups and double read NCHW
// only.
TEST(BlockedLayout, WinogradF2x2ReadsTheBlockedLayoutsInAllThreePasses) {
  auto aligned = [](std::vector<unsigned char>& v) {
    const auto addr = reinterpret_cast<std::uintptr_t>(v.data());
    return static_cast<void*>(v.data() + (64 - addr % 64) % 64);
  };
  conv::ConvAlgorithm<float>& wino = *conv::find_algorithm<float>(conv::Algo::WinogradF2x2, DeviceKind::CPU);
  conv::ConvAlgorithm<float>& direct = *conv::find_algorithm<float>(conv::Algo::Direct, DeviceKind::CPU);
  struct Case {
    Shape x, w;
    std::int64_t pad;
    int b;
  };
  const std::vector<Case> cases = {
      {Shape({3, 16, 28, 28}), Shape({16, 16, 3, 3}), 1, 8},   // resnet's first block
      {Shape({2, 32, 14, 14}), Shape({32, 32, 3, 3}), 1, 16},  // its second, block 16
      {Shape({5, 64, 7, 7}), Shape({64, 64, 3, 3}), 1, 8},     // odd images: tiles overhang
      {Shape({1, 8, 9, 6}), Shape({24, 8, 3, 3}), 0, 8},       // no padding; 24 = 16 + 8 outputs
      {Shape({2, 16, 5, 5}), Shape({8, 16, 3, 3}), 2, 8},      // padding 2 (the data pass's is 0)
      {Shape({3, 16, 1, 1}), Shape({16, 16, 3, 3}), 1, 16},    // 1 x 1 images
  };
  // The baseline kernels stay selected only inside the scope, even when an
  // assertion leaves it early.
  struct KernelChoice {
    explicit KernelChoice(bool baseline) { conv::winograd_blocked::use_baseline_kernel_for_testing(baseline); }
    ~KernelChoice() { conv::winograd_blocked::use_baseline_kernel_for_testing(false); }
  };
  for (const bool baseline : {false, true}) {
    const KernelChoice kernels(baseline);
    for (const Case& c : cases) {
      conv::ConvParams geom;
      geom.pad_h = geom.pad_w = c.pad;
      conv::ConvProblem plain = conv::make_problem(c.x, c.w, geom);
      conv::ConvProblem blocked = plain;
      blocked.x_block = blocked.y_block = c.b;
      const std::string what = blocked.to_string() + (baseline ? ", baseline kernel" : "");
      ASSERT_TRUE(wino.reads_blocked(blocked, conv::Pass::Forward)) << what;
      ASSERT_TRUE(wino.reads_blocked(blocked, conv::Pass::BackwardData)) << what;
      ASSERT_TRUE(wino.reads_blocked(blocked, conv::Pass::BackwardFilter)) << what;
      const Tensor<float> x = random_tensor<float>(plain.x_shape(), 5), w = random_tensor<float>(plain.w_shape(), 6);
      const Tensor<float> bias = random_tensor<float>(Shape({plain.k}), 7);
      const Tensor<float> dy = random_tensor<float>(plain.y_shape(), 8);
      std::vector<float> y_ref(static_cast<std::size_t>(plain.y_shape().numel()));
      std::vector<float> dx_ref(static_cast<std::size_t>(plain.x_shape().numel()));
      std::vector<float> dw_ref(static_cast<std::size_t>(plain.w_shape().numel())), db_ref(plain.k);
      std::vector<unsigned char> ws_ref(direct.workspace_bytes(plain, conv::Pass::Forward) +
                                        direct.workspace_bytes(plain, conv::Pass::BackwardData) +
                                        direct.workspace_bytes(plain, conv::Pass::BackwardFilter) + 64);
      direct.forward(plain, x.data(), w.data(), bias.data(), y_ref.data(), aligned(ws_ref));
      direct.backward_data(plain, dy.data(), w.data(), dx_ref.data(), aligned(ws_ref));
      direct.backward_filter(plain, x.data(), dy.data(), dw_ref.data(), db_ref.data(), aligned(ws_ref));
      std::vector<float> relu_ref = y_ref;
      for (float& v : relu_ref) v = v > 0.f ? v : 0.f;

      const Tensor<float> xb = to_blocked_ref(x, c.b), dyb = to_blocked_ref(dy, c.b);
      auto garbage = [](const Shape& s) {  // outputs must be overwritten
        return Tensor<float>::from_vector(s, std::vector<float>(static_cast<std::size_t>(s.numel()), 7.f), HOST);
      };
      Tensor<float> yb = garbage(plain.y_shape()), dxb = garbage(plain.x_shape());
      std::vector<unsigned char> ws(std::max({wino.workspace_bytes(blocked, conv::Pass::Forward),
                                              wino.workspace_bytes(blocked, conv::Pass::BackwardData),
                                              wino.workspace_bytes(blocked, conv::Pass::BackwardFilter)}) +
                                    64);
      wino.forward(blocked, xb.data(), w.data(), bias.data(), yb.mutable_data(), aligned(ws));
      EXPECT_TRUE(close(to_plain_ref(yb, c.b).to_vector(), y_ref, 1e-4, 1e-4)) << "forward, " << what;
      yb = garbage(plain.y_shape());
      ASSERT_TRUE(wino.forward_relu(blocked, xb.data(), w.data(), bias.data(), yb.mutable_data(), aligned(ws))) << what;
      EXPECT_TRUE(close(to_plain_ref(yb, c.b).to_vector(), relu_ref, 1e-4, 1e-4)) << "forward + ReLU, " << what;
      wino.backward_data(blocked, dyb.data(), w.data(), dxb.mutable_data(), aligned(ws));
      EXPECT_TRUE(close(to_plain_ref(dxb, c.b).to_vector(), dx_ref, 1e-4, 1e-4)) << "data pass, " << what;
      std::vector<float> dw(dw_ref.size(), 7.f), db(db_ref.size(), 7.f);
      wino.backward_filter(blocked, xb.data(), dyb.data(), dw.data(), db.data(), aligned(ws));
      // A weight gradient sums n x h x w products: its tolerance scales with them.
      const double sums = static_cast<double>(c.x[0] * c.x[2] * c.x[3]);
      EXPECT_TRUE(close(dw, dw_ref, 1e-4, 1e-5 * sums)) << "filter pass, " << what;
      EXPECT_TRUE(close(db, db_ref, 1e-5, 1e-6 * sums)) << "bias gradient, " << what;
    }
  }
  conv::ConvProblem blocked = conv::make_problem(Shape({2, 16, 8, 8}), Shape({16, 16, 3, 3}), {});
  blocked.x_block = blocked.y_block = 8;
  conv::ConvAlgorithm<float>& f4 = *conv::find_algorithm<float>(conv::Algo::WinogradF4x4, DeviceKind::CPU);
  EXPECT_FALSE(f4.reads_blocked(blocked, conv::Pass::Forward));
  EXPECT_FALSE(conv::find_algorithm<double>(conv::Algo::WinogradF2x2, DeviceKind::CPU)
                   ->reads_blocked(blocked, conv::Pass::Forward));
  conv::ConvProblem grouped = conv::make_problem(Shape({2, 16, 8, 8}), Shape({16, 8, 3, 3}), [] {
    conv::ConvParams p;
    p.groups = 2;
    return p;
  }());
  grouped.x_block = grouped.y_block = 8;
  EXPECT_FALSE(wino.reads_blocked(grouped, conv::Pass::Forward)) << "groups";
  std::vector<float> dw(static_cast<std::size_t>(grouped.w_shape().numel()));
  EXPECT_THROW(wino.backward_filter(grouped, nullptr, nullptr, dw.data(), nullptr, nullptr), NotSupportedError);
}
