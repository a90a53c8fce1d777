// The channel-parallel convolution against the single-process conv2d:
// forward values and gradients in float on random shapes whose channel
// counts rarely divide by the group size (6 filters over 4 ranks among
// them), with each conv algorithm; gradcheck in double with every rank's
// filters cut inside the graph from replicated variables, so the backward
// passes of copy_to_group, gather_channels and scatter_channels are all
// differentiated; and the channel collectives' round trip.
#include <random>

#include "../../support/gradcheck.h"
#include "magmadnn/parallel/model_parallel/parallel_conv.h"
#include "mp_test_util.h"

namespace {
using namespace mptest;
using distributed::mp::channel_parallel_conv2d;
using distributed::mp::take_axis1;

struct ConvCase {
  std::int64_t n, c, h, w, k, kh, kw;
  conv::ConvParams geom;
};

// The same shapes on every rank (the same seed). Case 0 is 6 filters of
// 3x3 over 3 channels, padded: 2, 2, 1, 1 filters at 4 ranks.
ConvCase conv_case(std::mt19937_64& gen, int trial) {
  const std::int64_t p = group()->size();
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(gen);
  };
  ConvCase c{2, 3, 8, 8, std::max<std::int64_t>(6, p), 3, 3, {}};
  c.geom.pad_h = c.geom.pad_w = 1;
  if (trial == 0) return c;
  c = {pick(1, 3), pick(1, 4), 0, 0, pick(p, p + 6), pick(1, 3), pick(1, 3), {}};
  c.h = c.kh + pick(0, 5), c.w = c.kw + pick(0, 5);
  c.geom.pad_h = pick(0, 1), c.geom.pad_w = pick(0, 1);
  c.geom.stride_h = pick(1, 2), c.geom.stride_w = pick(1, 2);
  return c;
}

struct Reference {
  Tensor<float> y, dx, dw, db;
};
// conv2d on one process (the direct algorithm) and the gradients of
// L = sum(y * R).
Reference reference(const Tensor<float>& x, const Tensor<float>& w, const Tensor<float>& b, const Tensor<float>& r,
                    const conv::ConvParams& geom) {
  auto xv = host_var("x", x), wv = host_var("W", w), bv = host_var("b", b);
  auto y = op::conv2d(xv, wv, bv, geom, conv::Algo::Direct);
  auto loss = op::reduce_sum(op::product(y, op::constant<float>("R", r)));
  auto t = op::gradients(loss, {xv, wv, bv});
  return {*y->eval(), *t.get(xv), *t.get(wv), *t.get(bv)};
}

class MpConv : public ::testing::TestWithParam<bool> {};

TEST_P(MpConv, ChannelParallelMatchesConv2d) {
  const bool gather = GetParam();
  const conv::Algo algos[] = {conv::Algo::Auto, conv::Algo::Direct, conv::Algo::Im2colGemm};
  std::mt19937_64 gen(17);
  for (int trial = 0; trial < 9; ++trial) {
    const ConvCase c = conv_case(gen, trial);
    const conv::Algo algo = algos[trial % 3];
    SCOPED_TRACE("trial " + std::to_string(trial) + ": x {" + std::to_string(c.n) + ", " + std::to_string(c.c) +
                 ", " + std::to_string(c.h) + ", " + std::to_string(c.w) + "}, " + std::to_string(c.k) +
                 " filters " + std::to_string(c.kh) + "x" + std::to_string(c.kw) + ", algo " +
                 std::to_string(static_cast<int>(algo)));
    const auto seed = static_cast<std::uint64_t>(300 + 4 * trial);
    const Tensor<float> x = magmadnn::testing::random_tensor<float>({c.n, c.c, c.h, c.w}, seed);
    const Tensor<float> w = magmadnn::testing::random_tensor<float>({c.k, c.c, c.kh, c.kw}, seed + 1);
    const Tensor<float> b = magmadnn::testing::random_tensor<float>({c.k}, seed + 2);
    const Shape ys = conv::make_problem(x.shape(), w.shape(), c.geom).y_shape();
    const Tensor<float> r = magmadnn::testing::random_tensor<float>(ys, seed + 3);
    const Reference ref = reference(x, w, b, r, c.geom);

    const Shard s = my_shard(c.k);
    auto xv = host_var("x", x), wv = host_var("W", rows_of(w, s)), bv = host_var("b", rows_of(b, s));
    auto y = channel_parallel_conv2d<float>(xv, wv, bv, group(), c.k, c.geom, gather, algo);
    // Without the gather each rank holds its channels of y and of the loss;
    // their sum over the ranks is the whole loss.
    auto loss = op::reduce_sum(op::product(y, op::constant<float>("R", gather ? r : take_axis1(r, s))));
    auto t = op::gradients(loss, {xv, wv, bv});
    EXPECT_TRUE(close(*y->eval(), gather ? ref.y : take_axis1(ref.y, s), 1e-5, 1e-6, "y"));
    EXPECT_TRUE(close(*t.get(xv), ref.dx, 1e-5, 1e-6, "dx"));
    EXPECT_TRUE(close(*t.get(wv), rows_of(ref.dw, s), 1e-5, 1e-6, "dW"));
    EXPECT_TRUE(close(*t.get(bv), rows_of(ref.db, s), 1e-5, 1e-6, "db"));
  }
}

INSTANTIATE_TEST_SUITE_P(Both, MpConv, ::testing::Bool());

TEST(MpConvCollectives, ScatterThenGatherChannelsIsTheIdentity) {
  const std::int64_t p = group()->size(), channels = 2 * p + 1;
  const Tensor<float> x = magmadnn::testing::random_tensor<float>({3, channels, 4, 5}, 61);
  auto xv = host_var("x", x);
  auto mine = distributed::mp::scatter_channels(xv, group());
  EXPECT_TRUE(close(*mine->eval(), take_axis1(x, my_shard(channels)), 0, 0, "this rank's channels"));
  EXPECT_TRUE(close(*distributed::mp::gather_channels(mine, group(), channels)->eval(), x, 0, 0, "gathered"));
}

// -- gradcheck in double ------------------------------------------------------------------
// Every rank holds the whole x, W and b as variables and cuts its filters
// in the graph (W {K, C, kh, kw} viewed as {1, K, C, kh*kw} so that the
// filters are the channels of scatter_channels), so the loss is one
// function of replicated inputs and the central differences see the whole
// group's computation.
using E = op::Expr<double>;
E filters_in_graph(const E& w) {
  const Shape s = w->get_output_shape();
  E mine = distributed::mp::scatter_channels(op::reshape(w, {1, s[0], s[1], s[2] * s[3]}), group());
  return op::reshape(mine, {my_shard(s[0]).extent, s[1], s[2], s[3]});
}
E bias_in_graph(const E& b) {
  const std::int64_t k = b->get_output_shape()[0];
  return op::reshape(distributed::mp::scatter_columns(op::reshape(b, {1, k}), group()), {my_shard(k).extent});
}

std::vector<Tensor<double>> inputs(std::vector<Shape> shapes, std::uint64_t seed) {
  std::vector<Tensor<double>> v;
  for (const Shape& s : shapes) v.push_back(magmadnn::testing::random_tensor<double>(s, seed++));
  return v;
}

TEST(MpConvGradcheck, ChannelParallelWithGather) {
  const std::int64_t p = group()->size(), k = 2 * p + 1;
  conv::ConvParams geom;
  geom.pad_h = geom.pad_w = 1, geom.stride_w = 2;
  EXPECT_TRUE(magmadnn::testing::gradcheck<double>(
      [&](const std::vector<op::Var<double>>& v) {
        return channel_parallel_conv2d<double>(v[0], filters_in_graph(v[1]), bias_in_graph(v[2]), group(), k, geom,
                                               true);
      },
      inputs({{2, 3, 5, 6}, {k, 3, 3, 3}, {k}}, 71)));
}

TEST(MpConvGradcheck, SplitChannelsThroughTanhThenGather) {
  // The channels stay split through an elementwise op and are gathered
  // after it: gather_channels' backward (each rank's slice of dy) and
  // copy_to_group's (the allreduce of dx) both in one loss.
  const std::int64_t p = group()->size(), k = p + 2;
  EXPECT_TRUE(magmadnn::testing::gradcheck<double>(
      [&](const std::vector<op::Var<double>>& v) {
        E y = channel_parallel_conv2d<double>(v[0], filters_in_graph(v[1]), bias_in_graph(v[2]), group(), k, {},
                                              false);
        return distributed::mp::gather_channels(op::tanh(y), group(), k);
      },
      inputs({{2, 2, 4, 4}, {k, 2, 2, 3}, {k}}, 81)));
}

TEST(MpConvErrors, WrongFilterSliceNamesTheExpectedShape) {
  const std::int64_t p = group()->size();
  if (p == 1) GTEST_SKIP() << "one rank: the whole filter bank is its slice";
  auto x = host_var("x", magmadnn::testing::random_tensor<float>({1, 2, 5, 5}, 1));
  auto w = host_var("W", magmadnn::testing::random_tensor<float>({p + 5, 2, 3, 3}, 2));  // whole, not a slice
  try {
    (void)channel_parallel_conv2d<float>(x, w, op::Expr<float>(), group(), p + 5, {}, true);
    ADD_FAILURE() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("w must be {" + std::to_string(my_shard(p + 5).extent) + ", C, kh, kw}"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
