// Each layer's output against central differences (double), with respect to
// its input and to every one of its weights (layer_gradcheck.h).
#include <gtest/gtest.h>

#include "layer_gradcheck.h"

using namespace magmadnn;
using magmadnn::testing::layer_gradcheck;
using magmadnn::testing::random_tensor;
using X = op::Expr<double>;

TEST(LayerGradcheck, FullyConnectedWithBias) {
  EXPECT_TRUE(layer_gradcheck([](const X& x) { return layer::fullyconnected(x, 3); }, random_tensor<double>({4, 5}, 1)));
}

TEST(LayerGradcheck, FullyConnectedWithoutBias) {
  EXPECT_TRUE(layer_gradcheck([](const X& x) { return layer::fullyconnected(x, 3, false); },
                              random_tensor<double>({4, 5}, 2)));
}

TEST(LayerGradcheck, FullyConnectedFlattensItsInput) {
  EXPECT_TRUE(layer_gradcheck([](const X& x) { return layer::fullyconnected(x, 2); },
                              random_tensor<double>({3, 2, 2, 2}, 3)));
}

class ActivationGradcheck : public ::testing::TestWithParam<layer::activation_t> {};

TEST_P(ActivationGradcheck, MatchesCentralDifferences) {
  const layer::activation_t a = GetParam();
  // Away from the kink of the rectifiers, where the derivative is undefined.
  Tensor<double> x = random_tensor<double>({4, 6}, 4);
  for (std::int64_t i = 0; i < x.size(); ++i) {
    if (std::abs(x.get(i)) < 1e-3) x.set(i, 0.5);
  }
  EXPECT_TRUE(layer_gradcheck([a](const X& in) { return layer::activation(in, a, 0.1); }, x))
      << layer::activation_name(a);
}

INSTANTIATE_TEST_SUITE_P(AllFunctions, ActivationGradcheck, ::testing::ValuesIn(layer::all_activations()),
                         [](const auto& info) { return std::string(layer::activation_name(info.param)); });

TEST(LayerGradcheck, Flatten) {
  EXPECT_TRUE(layer_gradcheck([](const X& x) { return layer::flatten(x); }, random_tensor<double>({2, 3, 2, 2}, 5)));
}

TEST(LayerGradcheck, Output) {
  EXPECT_TRUE(layer_gradcheck([](const X& x) { return layer::output(x); }, random_tensor<double>({3, 4}, 6)));
}

TEST(LayerGradcheck, DropoutInEvalModeIsTheIdentity) {
  EXPECT_TRUE(layer_gradcheck([](const X& x) { return layer::dropout(x, 0.5f); }, random_tensor<double>({4, 5}, 7),
                              /*training=*/false));
}

// In training the mask is redrawn at every forward pass, so central
// differences of a resampled function mean nothing; instead the gradient must
// be exactly the mask that the forward pass used (y = x * mask), and rate 0
// (mask of ones) passes the ordinary check in training mode.
TEST(LayerGradcheck, DropoutInTrainingUsesTheForwardMask) {
  EXPECT_TRUE(layer_gradcheck([](const X& x) { return layer::dropout(x, 0.0f); }, random_tensor<double>({4, 5}, 8)));

  auto x = op::var<double>("x", {6, 7}, {ZERO}, HOST);
  x->set_value(random_tensor<double>({6, 7}, 9));
  auto d = layer::dropout(X(x), 0.5f);
  d->set_training(true);
  auto r = op::constant<double>("r", random_tensor<double>({6, 7}, 10));
  auto loss = op::reduce_sum(op::product(d->out(), r));
  auto table = op::gradients(loss, std::vector<op::Expr<double>>{x});
  const Tensor<double>* g = table.get(x);
  ASSERT_NE(g, nullptr);
  const Tensor<double>* y = d->out()->eval();
  int dropped = 0;
  for (std::int64_t i = 0; i < 42; ++i) {
    const double mask = y->get(i) / x->output().get(i);  // 0 or 1 / keep
    EXPECT_NEAR(g->get(i), mask * r->output().get(i), 1e-12) << "element " << i;
    EXPECT_TRUE(std::abs(mask) < 1e-12 || std::abs(mask - 2.0) < 1e-12) << "mask " << mask;
    dropped += std::abs(mask) < 1e-12;
  }
  EXPECT_GT(dropped, 5);
  EXPECT_LT(dropped, 37);
}

TEST(LayerGradcheck, BatchNormTrainingFeatures) {
  EXPECT_TRUE(layer_gradcheck([](const X& x) { return layer::batchnorm(x); }, random_tensor<double>({6, 3}, 11)));
}

TEST(LayerGradcheck, BatchNormTrainingChannels) {
  EXPECT_TRUE(layer_gradcheck([](const X& x) { return layer::batchnorm(x); }, random_tensor<double>({3, 2, 2, 3}, 12)));
}

TEST(LayerGradcheck, BatchNormEval) {
  EXPECT_TRUE(layer_gradcheck([](const X& x) { return layer::batchnorm(x); }, random_tensor<double>({4, 3}, 13),
                              /*training=*/false));
}

// A small network of layers, built on a fed input layer: the gradient of the
// whole stack with respect to every weight of every layer.
TEST(LayerGradcheck, NetworkOfLayers) {
  const Tensor<double> batch = random_tensor<double>({5, 4}, 14);
  std::vector<Tensor<double>> inputs;
  auto build = [&](std::vector<layer::Ref<layer::Layer<double>>>& layers) {
    auto in = layer::input<double>({-1, 4}, HOST);
    in->placeholder()->set_value(batch);
    auto fc1 = layer::fullyconnected(in->out(), 6, true, layer::RELU);
    auto bn = layer::batchnorm(fc1->out());
    auto act = layer::activation(bn->out(), layer::TANH);
    auto fc2 = layer::fullyconnected(act->out(), 3);
    auto sm = layer::activation(fc2->out(), layer::SOFTMAX);
    auto out = layer::output(sm->out());
    layers = {in, fc1, bn, act, fc2, sm, out};
  };
  std::vector<layer::Ref<layer::Layer<double>>> probe;
  build(probe);
  std::uint64_t seed = 200;
  for (const auto& l : probe) {
    for (const auto& w : l->get_weights()) inputs.push_back(random_tensor<double>(w->output().shape(), seed++));
  }
  ASSERT_EQ(inputs.size(), 6u);  // fc1 W, b; bn gamma, beta; fc2 W, b
  EXPECT_TRUE(magmadnn::testing::gradcheck<double>(
      [&](const std::vector<op::Var<double>>& v) {
        std::vector<layer::Ref<layer::Layer<double>>> layers;
        build(layers);
        std::size_t next = 0;
        for (const auto& l : layers) {
          magmadnn::testing::rebind_weights(*l, v, next);
          next += l->get_weights().size();
        }
        return layers.back()->out();
      },
      inputs));
}

TEST(LayerGradcheck, Conv2dWithBiasPaddingStride) {
  EXPECT_TRUE(layer_gradcheck(
      [](const X& x) { return layer::conv2d(x, {3, 3}, 4, {1, 1}, {2, 2}, {1, 1}, true, /*use_bias=*/true); },
      random_tensor<double>({2, 3, 5, 5}, 15)));
}

TEST(LayerGradcheck, Conv2dDilatedWithoutBias) {
  EXPECT_TRUE(layer_gradcheck([](const X& x) { return layer::conv2d(x, {2, 3}, 2, {0, 1}, {1, 1}, {2, 1}); },
                              random_tensor<double>({2, 2, 6, 5}, 16)));
}

TEST(LayerGradcheck, Conv2dGroups) {
  conv::ConvParams g;
  g.groups = 2;
  g.pad_h = g.pad_w = 1;
  EXPECT_TRUE(layer_gradcheck(
      [g](const X& x) { return layer::make_layer<layer::Conv2dLayer<double>>(x, layer::Dims2{3, 3}, 4, g, true); },
      random_tensor<double>({2, 4, 4, 4}, 17)));
}

TEST(LayerGradcheck, MaxPooling) {
  EXPECT_TRUE(layer_gradcheck([](const X& x) { return layer::pooling(x, {2, 2}, {0, 0}, {2, 2}, MAX_POOL); },
                              random_tensor<double>({2, 3, 4, 6}, 18)));
}

TEST(LayerGradcheck, AveragePoolingPaddedOverlapping) {
  EXPECT_TRUE(layer_gradcheck([](const X& x) { return layer::pooling(x, {3, 3}, {1, 1}, {2, 2}, AVERAGE_POOL); },
                              random_tensor<double>({2, 2, 5, 5}, 19)));
}

// LeNet-style: conv, pooling and flatten feeding a fully connected layer.
TEST(LayerGradcheck, ConvolutionalStack) {
  const Tensor<double> batch = random_tensor<double>({2, 1, 8, 8}, 20);
  auto build = [&](std::vector<layer::Ref<layer::Layer<double>>>& layers) {
    auto in = layer::input<double>({-1, 1, 8, 8}, HOST);
    in->placeholder()->set_value(batch);
    auto c1 = layer::conv2d(in->out(), {3, 3}, 2, {0, 0}, {1, 1}, {1, 1}, true, true);
    auto a1 = layer::activation(c1->out(), layer::TANH);
    auto p1 = layer::pooling(a1->out(), {2, 2}, {0, 0}, {2, 2}, AVERAGE_POOL);
    auto f = layer::flatten(p1->out());
    auto fc = layer::fullyconnected(f->out(), 3);
    layers = {in, c1, a1, p1, f, fc};
  };
  std::vector<layer::Ref<layer::Layer<double>>> probe;
  build(probe);
  std::vector<Tensor<double>> inputs;
  std::uint64_t seed = 300;
  for (const auto& l : probe) {
    for (const auto& w : l->get_weights()) inputs.push_back(random_tensor<double>(w->output().shape(), seed++));
  }
  ASSERT_EQ(inputs.size(), 4u);
  EXPECT_TRUE(magmadnn::testing::gradcheck<double>(
      [&](const std::vector<op::Var<double>>& v) {
        std::vector<layer::Ref<layer::Layer<double>>> layers;
        build(layers);
        std::size_t next = 0;
        for (const auto& l : layers) {
          magmadnn::testing::rebind_weights(*l, v, next);
          next += l->get_weights().size();
        }
        return layers.back()->out();
      },
      inputs));
}
