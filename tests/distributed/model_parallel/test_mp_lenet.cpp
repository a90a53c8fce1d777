// LeNet-5 (the lenet5 preset of magmadnn/run/presets.cpp: conv 6 5x5 "same",
// max pool, conv 16 5x5, max pool, dense 120, 84, 10) trained with both
// convolutions channel-parallel against the same network on one process:
// the same initial weights, then the same loss and weights after every SGD
// step. Also the filter memory each rank keeps: 1/P of the whole, within
// one filter.
#include <cstdio>

#include "../../support/gradcheck.h"
#include "mp_test_util.h"

namespace {
using namespace mptest;
using LayerPtr = std::shared_ptr<layer::Layer<float>>;
using ConvLayer = layer::ParallelConv2DLayer<float>;

constexpr std::int64_t kBatch = 8, kClasses = 10;
constexpr int kSteps = 3;

struct LeNet {
  std::vector<LayerPtr> layers;
  LayerPtr conv1, conv2, fc1, fc2, fc3;
};

// Both forms draw their weights in the same order from the same seed; the
// convolutions are initialised for the ReLU after them (He normal) as the
// preset's are, the parallel ones gather their output channels.
LeNet lenet5(bool parallel) {
  set_seed(2027);
  layer::reset_layer_names();
  LeNet m;
  auto x = op::placeholder<float>("x", {-1, 1, 28, 28});
  x->set_value(Tensor<float>({1, 1, 28, 28}, {ZERO}));
  auto push = [&](auto ref) {
    m.layers.push_back(ref.ptr());
    return ref->out();
  };
  const auto relu_init = layer::init_for<float>(layer::RELU);
  auto conv = [&](const op::Expr<float>& in, std::int64_t filters, layer::Dims2 padding) {
    return parallel ? push(layer::channel_parallel_conv2d<float>(in, {5, 5}, filters, group(), padding, {1, 1},
                                                                 {1, 1}, true, true, relu_init))
                    : push(layer::conv2d<float>(in, {5, 5}, filters, padding, {1, 1}, {1, 1}, true, true, relu_init));
  };
  op::Expr<float> h = push(layer::input<float>(x));
  h = conv(h, 6, {2, 2});
  m.conv1 = m.layers.back();
  h = push(layer::activation<float>(h, layer::RELU));
  h = push(layer::pooling<float>(h, {2, 2}, {0, 0}, {2, 2}, MAX_POOL));
  h = conv(h, 16, {0, 0});
  m.conv2 = m.layers.back();
  h = push(layer::activation<float>(h, layer::RELU));
  h = push(layer::pooling<float>(h, {2, 2}, {0, 0}, {2, 2}, MAX_POOL));
  h = push(layer::flatten<float>(h));
  h = push(layer::fullyconnected<float>(h, 120, true, layer::RELU));
  m.fc1 = m.layers.back();
  h = push(layer::activation<float>(h, layer::RELU));
  h = push(layer::fullyconnected<float>(h, 84, true, layer::RELU));
  m.fc2 = m.layers.back();
  h = push(layer::activation<float>(h, layer::RELU));
  h = push(layer::fullyconnected<float>(h, kClasses, true, layer::SOFTMAX));
  m.fc3 = m.layers.back();
  h = push(layer::activation<float>(h, layer::SOFTMAX));
  push(layer::output<float>(h));
  return m;
}

std::unique_ptr<model::NeuralNetwork<float>> make_model(const LeNet& m) {
  model::nn_params_t p(kBatch, 1, 0.05);
  p.shuffle = false;
  return std::make_unique<model::NeuralNetwork<float>>(m.layers, optimizer::CROSS_ENTROPY, optimizer::SGD, p);
}

const Tensor<float>& weight(const LayerPtr& l, std::size_t i = 0) { return l->get_weights()[i]->output(); }

double max_abs_diff(const Tensor<float>& a, const Tensor<float>& b) {
  const auto u = a.to_vector(), v = b.to_vector();
  double worst = 0;
  for (std::size_t i = 0; i < u.size(); ++i) worst = std::max(worst, std::abs(double(u[i]) - double(v[i])));
  return worst;
}

// The parallel network's weights against this rank's slices of the
// reference's; returns the largest difference of the two convolutions' W.
double expect_same_weights(const LeNet& ref, const LeNet& par, double rtol, double atol, const std::string& when) {
  SCOPED_TRACE(when);
  double worst = 0;
  for (const auto& [name, r, p, k] :
       {std::tuple{"conv1", ref.conv1, par.conv1, 6}, {"conv2", ref.conv2, par.conv2, 16}}) {
    const Shard s = my_shard(k);
    const Tensor<float> w = rows_of(weight(r, 0), s);
    EXPECT_TRUE(close(weight(p, 0), w, rtol, atol, std::string(name) + " W (channel-parallel)"));
    EXPECT_TRUE(close(weight(p, 1), rows_of(weight(r, 1), s), rtol, atol, std::string(name) + " b"));
    if (weight(p, 0).shape() == w.shape()) worst = std::max(worst, max_abs_diff(weight(p, 0), w));
  }
  for (const auto& [name, r, p] :
       {std::tuple{"fc1", ref.fc1, par.fc1}, {"fc2", ref.fc2, par.fc2}, {"fc3", ref.fc3, par.fc3}})
    EXPECT_TRUE(close(weight(p), weight(r), rtol, atol, std::string(name) + " W (replicated)"));
  return worst;
}

TEST(MpLeNet, ChannelParallelConvsMatchOneProcessStepForStep) {
  const LeNet ref = lenet5(false), par = lenet5(true);
  ASSERT_TRUE(std::dynamic_pointer_cast<ConvLayer>(par.conv1) && std::dynamic_pointer_cast<ConvLayer>(par.conv2));
  expect_same_weights(ref, par, 0.0, 0.0, "initial weights");  // the same draws: bit-identical
  auto ref_model = make_model(ref), par_model = make_model(par);

  for (int step = 0; step < kSteps; ++step) {
    const auto seed = static_cast<std::uint64_t>(700 + step);
    const Tensor<float> x = magmadnn::testing::random_tensor<float>({kBatch, 1, 28, 28}, seed, 0.0, 1.0);
    std::vector<float> yv(kBatch * kClasses, 0.f);
    for (std::int64_t i = 0; i < kBatch; ++i)
      yv[static_cast<std::size_t>(i * kClasses + (i * 3 + step) % kClasses)] = 1.f;
    const Tensor<float> y = Tensor<float>::from_vector({kBatch, kClasses}, yv);
    const double ref_loss = ref_model->fit(x, y).back().train_loss;
    const double par_loss = par_model->fit(x, y).back().train_loss;
    EXPECT_NEAR(par_loss, ref_loss, 1e-5 * std::abs(ref_loss)) << "step " << step;
    const double dw = expect_same_weights(ref, par, 1e-5, 1e-7, "after step " + std::to_string(step + 1));
    if (group()->rank() == 0)
      std::printf("[model_parallel] LeNet-5 P=%d step %d: loss %.7f, one process %.7f, |difference| %.2g, "
                  "max |conv W difference| %.2g\n",
                  group()->size(), step + 1, par_loss, ref_loss, std::abs(par_loss - ref_loss), dw);
  }
}

TEST(MpLeNet, EachRankKeepsItsShareOfTheFilters) {
  const LeNet par = lenet5(true);
  const int p = group()->size();
  for (const auto& [name, l] : {std::pair{"conv1 1->6 5x5", par.conv1}, {"conv2 6->16 5x5", par.conv2}}) {
    auto c = std::dynamic_pointer_cast<ConvLayer>(l);
    ASSERT_TRUE(c) << name;
    const Shape whole_shape = c->full_filter_shape();
    const std::int64_t whole = whole_shape.numel(), mine = c->get_filter()->output().size();
    const std::int64_t filter = whole / whole_shape[0];  // one output channel's C * kh * kw
    EXPECT_LE(std::abs(static_cast<double>(mine) - static_cast<double>(whole) / p), static_cast<double>(filter))
        << name;
    EXPECT_EQ(c->get_bias()->output().size(), c->channel_shard().extent) << name;
    // All ranks together hold the whole filter bank, once.
    std::int64_t total = mine;
    group()->allreduce(distributed::host_buffer(&total, 1), distributed::ReduceOp::sum);
    EXPECT_EQ(total, whole) << name;
    std::printf("[model_parallel] P=%d rank %d %s: W %lld of %lld floats (%lld filters of %lld, %.4f of the whole)\n",
                p, group()->rank(), name, static_cast<long long>(mine), static_cast<long long>(whole),
                static_cast<long long>(c->channel_shard().extent), static_cast<long long>(whole_shape[0]),
                static_cast<double>(mine) / whole);
  }
}

TEST(MpLeNet, RefusesMoreRanksThanFilters) {
  const int p = group()->size();
  if (p == 1) GTEST_SKIP() << "one rank can hold any filter count";
  auto x = op::placeholder<float>("x", {-1, 1, 8, 8});
  x->set_value(Tensor<float>({1, 1, 8, 8}, {ZERO}));
  try {
    (void)layer::channel_parallel_conv2d<float>(x, {3, 3}, p - 1, group());
    ADD_FAILURE() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(p - 1) + " output channels cannot be split over a group of " +
                                          std::to_string(p) + " ranks"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
