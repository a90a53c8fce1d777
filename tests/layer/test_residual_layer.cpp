// The residual block (layer/residual_layer.h): shapes, shortcut kinds, the
// names of its parameters and running statistics, train/eval behaviour, its
// output against the same computation written out with the graph's ops,
// and its gradients against central differences (double).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "layer_gradcheck.h"
#include "magmadnn/compute/activation.h"
#include "magmadnn/compute/arithmetic.h"
#include "magmadnn/compute/conv.h"
#include "magmadnn/compute/regularization.h"

using namespace magmadnn;
using magmadnn::testing::layer_gradcheck;
using magmadnn::testing::random_tensor;

namespace {

op::Expr<float> input_of(const Shape& s) {
  return op::Expr<float>(op::var<float>("x", s, {ZERO}, HOST));
}

}  // namespace

TEST(ResidualLayer, ShapesAndShortcuts) {
  auto same = layer::residual<float>(input_of({2, 8, 9, 9}), 8);
  EXPECT_FALSE(same->projects());
  EXPECT_EQ(same->get_output_shape(), Shape({2, 8, 9, 9}));
  EXPECT_EQ(same->get_weights().size(), 6u);  // 2 filters, 2 x (gamma, beta)
  auto down = layer::residual<float>(input_of({2, 8, 9, 9}), 16, {2, 2});
  EXPECT_TRUE(down->projects());
  EXPECT_EQ(down->get_output_shape(), Shape({2, 16, 5, 5}));
  EXPECT_EQ(down->get_weights().size(), 9u);
  auto wider = layer::residual<float>(input_of({1, 3, 4, 4}), 5);
  EXPECT_TRUE(wider->projects());  // channels change at stride 1
  EXPECT_EQ(wider->type_name(), "Residual");
  // 3x3 convs without bias: 16*8*9 + 16*16*9 + 16*8 (projection) + 3 x 2 x 16 (BN).
  EXPECT_EQ(down->num_params(), 16 * 8 * 9 + 16 * 16 * 9 + 16 * 8 + 3 * 2 * 16);
}

TEST(ResidualLayer, NamesItsPartsUnderItsOwnName) {
  auto r = layer::residual<float>(input_of({2, 4, 6, 6}), 8, {2, 2});
  std::set<std::string> names;
  for (const auto& [name, v] : r->named_weights()) names.insert(name);
  const std::string n = r->get_name();
  for (const char* key : {"conv1/W", "bn1/gamma", "bn1/beta", "conv2/W", "bn2/gamma", "bn2/beta", "conv3/W",
                          "bn3/gamma", "bn3/beta"})
    EXPECT_EQ(names.count(n + "/" + key), 1u) << key;
  std::set<std::string> state;
  for (const auto& [name, t] : r->get_state()) state.insert(name);
  EXPECT_EQ(state.size(), 6u);
  EXPECT_EQ(state.count(n + "/bn3/running_var"), 1u);
}

TEST(ResidualLayer, RefusesBadArguments) {
  EXPECT_THROW(layer::residual<float>(input_of({2, 6}), 4), ShapeError);
  EXPECT_THROW(layer::residual<float>(input_of({2, 3, 4, 4}), 0), ValueError);
  EXPECT_THROW(layer::residual<float>(input_of({2, 3, 4, 4}), 4, {0, 1}), ValueError);
}

// The block equals relu(BN(conv(relu(BN(conv(x))))) + BN(conv1x1(x))) built
// from the same weights with op:: functions, in training mode.
TEST(ResidualLayer, EqualsTheCompositionOfItsOps) {
  auto x = op::var<float>("x", {3, 4, 7, 7}, {UNIFORM, {-1.0f, 1.0f}}, HOST);
  auto r = layer::residual<float>(op::Expr<float>(x), 6, {2, 2});
  const auto& w = r->get_weights();  // conv1 W, bn1 g, b, conv2 W, bn2 g, b, conv3 W, bn3 g, b
  ASSERT_EQ(w.size(), 9u);
  const auto geom = [](std::int64_t pad, std::int64_t stride) {
    return layer::conv_geometry({pad, pad}, {stride, stride}, {1, 1});
  };
  op::Expr<float> y1 = op::batchnorm(op::conv2d(op::Expr<float>(x), op::Expr<float>(w[0]), geom(1, 2)), w[1], w[2]);
  op::Expr<float> y2 = op::batchnorm(op::conv2d(op::relu(y1), op::Expr<float>(w[3]), geom(1, 1)), w[4], w[5]);
  op::Expr<float> s = op::batchnorm(op::conv2d(op::Expr<float>(x), op::Expr<float>(w[6]), geom(0, 2)), w[7], w[8]);
  const auto want = op::relu(op::add(y2, s))->eval()->to_vector();
  const auto got = r->out()->eval()->to_vector();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << i;
}

TEST(ResidualLayer, EvalModeUsesTheRunningStatistics) {
  auto x = op::var<float>("x", {4, 2, 5, 5}, {UNIFORM, {-1.0f, 3.0f}}, HOST);
  auto r = layer::residual<float>(op::Expr<float>(x), 2);
  const auto train = r->out()->eval()->to_vector();
  r->set_training(false);
  const auto eval = r->out()->eval()->to_vector();
  double diff = 0;
  for (std::size_t i = 0; i < train.size(); ++i) diff += std::fabs(train[i] - eval[i]);
  EXPECT_GT(diff, 1e-2);  // running statistics (after one update) differ from the batch's
}

using XD = op::Expr<double>;

TEST(LayerGradcheck, ResidualIdentityShortcut) {
  EXPECT_TRUE(layer_gradcheck([](const XD& x) { return layer::residual(x, 3); },
                              random_tensor<double>({2, 3, 4, 4}, 21)));
}

TEST(LayerGradcheck, ResidualProjectionShortcut) {
  EXPECT_TRUE(layer_gradcheck([](const XD& x) { return layer::residual(x, 4, {2, 2}); },
                              random_tensor<double>({2, 2, 5, 5}, 22)));
}
