// Shapes, batch-size freedom, parameters, initialization, names and
// train/eval behaviour of the built-in layers.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "magmadnn/backend/unary_op_table.h"
#include "magmadnn/core/random.h"
#include "magmadnn/layer/layers.h"
#include "magmadnn/tensor/math.h"
#include "support/gradcheck.h"

using namespace magmadnn;
using magmadnn::testing::random_tensor;
using X = op::Expr<float>;

namespace {

struct Stats {
  double mean = 0, var = 0, max_abs = 0;
};
Stats stats_of(const Tensor<float>& t) {
  Stats s;
  const auto v = t.to_vector();
  for (float x : v) s.mean += x;
  s.mean /= double(v.size());
  for (float x : v) {
    s.var += (x - s.mean) * (x - s.mean);
    s.max_abs = std::max(s.max_abs, double(std::abs(x)));
  }
  s.var /= double(v.size());
  return s;
}

}  // namespace

TEST(InputLayer, FreesTheBatchAxisOfAVariable) {
  auto x_batch = op::var<float>("x_batch", {4, 3, 5}, {UNIFORM, {-1.0f, 1.0f}}, HOST);
  auto in = layer::input<float>(x_batch);
  EXPECT_EQ(in->type_name(), "Input");
  EXPECT_EQ(in->placeholder()->role(), op::Variable<float>::Role::Placeholder);
  EXPECT_EQ(in->placeholder()->output().get_memory_type(), HOST);
  EXPECT_EQ(in->get_output_shape(), Shape({4, 3, 5}));
  EXPECT_EQ(in->out()->eval()->to_vector(), x_batch->output().to_vector());  // starts as a copy of x
  in->placeholder()->set_value(Tensor<float>({7, 3, 5}, {ONE}, HOST));
  EXPECT_EQ(in->get_output_shape(), Shape({7, 3, 5}));
  EXPECT_THROW(in->placeholder()->set_value(Tensor<float>({7, 3, 4}, {ONE}, HOST)), ShapeError);
}

TEST(InputLayer, UsesAGivenPlaceholderAndRejectsExpressions) {
  auto p = op::placeholder<float>("X", {-1, 8}, HOST);
  auto in = layer::input(p);
  EXPECT_EQ(in->placeholder().get(), p.get());
  EXPECT_EQ(in->out().get(), p.get());
  // A layer with parameters cannot size itself on an unset placeholder.
  EXPECT_THROW(layer::fullyconnected(in->out(), 3), ValueError);
  p->set_value(Tensor<float>({2, 8}, {ONE}, HOST));
  EXPECT_NO_THROW(layer::fullyconnected(in->out(), 3));

  auto v = op::var<float>("v", {2, 8}, {ONE}, HOST);
  EXPECT_THROW(layer::input(op::add(v, v)), ValueError);
}

TEST(InputLayer, FromAPattern) {
  auto in = layer::input<double>({-1, 3, 4}, HOST);
  EXPECT_EQ(in->get_output_shape(), Shape({1, 3, 4}));
  in->placeholder()->set_value(random_tensor<double>({5, 3, 4}, 1));
  EXPECT_EQ(in->get_output_shape(), Shape({5, 3, 4}));
}

TEST(FullyConnected, ShapesAndBatchSizeChanges) {
  auto x_batch = op::var<double>("x_batch", {4, 5}, {NONE}, HOST);
  auto in = layer::input<double>(x_batch);
  auto fc = layer::fullyconnected(in->out(), 3);
  EXPECT_EQ(fc->get_weight()->output().shape(), Shape({3, 5}));
  ASSERT_TRUE(fc->has_bias());
  EXPECT_EQ(fc->get_bias()->output().shape(), Shape({3}));  // per output unit, not per batch row
  EXPECT_EQ(fc->num_params(), 3 * 5 + 3);
  EXPECT_EQ(fc->get_output_shape(), Shape({4, 3}));
  EXPECT_EQ(fc->get_input_shape(), Shape({4, 5}));

  // Set a non-zero bias and check the values for batch sizes 7 and 1.
  for (std::int64_t j = 0; j < 3; ++j) fc->get_bias()->value().set(j, 0.5 * double(j + 1));
  for (std::int64_t n : {7, 1}) {
    const Tensor<double> xb = random_tensor<double>({n, 5}, 20 + n);
    in->placeholder()->set_value(xb);
    const Tensor<double>* y = fc->out()->eval();
    ASSERT_EQ(y->shape(), Shape({n, 3}));
    const Tensor<double>& W = fc->get_weight()->output();
    for (std::int64_t r = 0; r < n; ++r) {
      for (std::int64_t j = 0; j < 3; ++j) {
        double want = 0.5 * double(j + 1);
        for (std::int64_t k = 0; k < 5; ++k) want += xb.get({r, k}) * W.get({j, k});
        EXPECT_NEAR(y->get({r, j}), want, 1e-12) << "batch " << n << " row " << r << " unit " << j;
      }
    }
  }
}

TEST(FullyConnected, NoBiasAndFlattening) {
  auto x = op::var<float>("x", {4, 2, 3, 3}, {UNIFORM}, HOST);
  auto fc = layer::fullyconnected(layer::input(x)->out(), 10, false);
  EXPECT_FALSE(fc->has_bias());
  EXPECT_EQ(fc->get_weights().size(), 1u);
  EXPECT_EQ(fc->get_weight()->output().shape(), Shape({10, 18}));
  EXPECT_EQ(fc->get_output_shape(), Shape({4, 10}));
  EXPECT_THROW(layer::fullyconnected(fc->out(), 0), ValueError);
}

TEST(FullyConnected, GlorotAndHeInitialization) {
  auto x = op::var<float>("x", {2, 512}, {ZERO}, HOST);
  const double in = 512, out = 256;
  // Glorot uniform: |w| <= sqrt(6 / (in + out)), variance 2 / (in + out).
  auto g = layer::fullyconnected(X(x), 256);
  const Stats gs = stats_of(g->get_weight()->output());
  const double bound = std::sqrt(6.0 / (in + out));
  EXPECT_LE(gs.max_abs, bound + 1e-6);
  EXPECT_GT(gs.max_abs, 0.95 * bound);
  EXPECT_NEAR(gs.var, 2.0 / (in + out), 0.05 * 2.0 / (in + out));
  EXPECT_NEAR(gs.mean, 0.0, 1e-3);
  EXPECT_EQ(stats_of(g->get_bias()->output()).max_abs, 0.0);  // bias starts at zero

  // He normal when the layer is told a ReLU follows: variance 2 / fan_in.
  auto h = layer::fullyconnected(X(x), 256, true, layer::RELU);
  const Stats hs = stats_of(h->get_weight()->output());
  EXPECT_NEAR(hs.var, 2.0 / in, 0.05 * 2.0 / in);
  EXPECT_NEAR(hs.mean, 0.0, 2e-3);
  EXPECT_GT(hs.max_abs, 3.0 * std::sqrt(2.0 / in));  // normal tails, not a uniform box
  // ... or when given the initializer directly.
  auto h2 = layer::fullyconnected(X(x), 256, true, tensor_filler_t<float>(HE));
  EXPECT_NEAR(stats_of(h2->get_weight()->output()).var, 2.0 / in, 0.05 * 2.0 / in);
  // Tanh keeps Glorot.
  auto t = layer::fullyconnected(X(x), 256, true, layer::TANH);
  EXPECT_LE(stats_of(t->get_weight()->output()).max_abs, bound + 1e-6);
}

TEST(FullyConnected, ReproducibleFromTheGlobalSeed) {
  auto x = op::var<float>("x", {2, 20}, {ZERO}, HOST);
  auto build = [&] {
    auto a = layer::fullyconnected(X(x), 10);
    auto b = layer::fullyconnected(a->out(), 5, true, layer::RELU);
    return std::make_pair(a->get_weight()->output().to_vector(), b->get_weight()->output().to_vector());
  };
  set_seed(1234);
  const auto first = build();
  set_seed(1234);
  const auto second = build();
  EXPECT_EQ(first, second);
  EXPECT_NE(first.first, std::vector<float>(first.first.size(), 0.0f));
  set_seed(99);
  EXPECT_NE(build().first, first.first);
}

TEST(Layer, DefaultNamesAreUniquePerType) {
  layer::reset_layer_names();
  auto x = op::var<float>("x", {2, 4}, {ZERO}, HOST);
  auto in = layer::input(x);
  auto a = layer::fullyconnected(in->out(), 3);
  auto b = layer::fullyconnected(a->out(), 3);
  auto act = layer::activation(b->out(), layer::RELU);
  EXPECT_EQ(in->get_name(), "input_1");
  EXPECT_EQ(a->get_name(), "fullyconnected_1");
  EXPECT_EQ(b->get_name(), "fullyconnected_2");
  EXPECT_EQ(act->get_name(), "activation_1");
  EXPECT_EQ(b->get_weight()->get_name(), "fullyconnected_2/W");
  EXPECT_EQ(b->get_bias()->get_name(), "fullyconnected_2/b");
  b->set_name("fc2");
  const auto named = b->named_weights();
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].first, "fc2/W");
  EXPECT_EQ(named[1].first, "fc2/b");
  EXPECT_EQ(named[1].second.get(), b->get_bias().get());
  layer::reset_layer_names();
  EXPECT_EQ(layer::fullyconnected(in->out(), 3)->get_name(), "fullyconnected_1");
}

TEST(Activation, ComputesEachFunction) {
  auto x = op::var<double>("x", {1, 4}, {ZERO}, HOST);
  x->set_value(Tensor<double>::from_vector({1, 4}, {-2.0, -0.5, 0.5, 2.0}, HOST));
  auto check = [&](layer::activation_t a, std::vector<double> want) {
    auto l = layer::activation(x, a, 0.1);
    const auto got = l->out()->eval()->to_vector();
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << layer::activation_name(a);
  };
  check(layer::RELU, {0, 0, 0.5, 2});
  check(layer::LEAKY_RELU, {-0.2, -0.05, 0.5, 2});
  check(layer::SIGMOID, {1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(0.5)), 1 / (1 + std::exp(-0.5)),
                         1 / (1 + std::exp(-2.0))});
  check(layer::TANH, {std::tanh(-2.0), std::tanh(-0.5), std::tanh(0.5), std::tanh(2.0)});
  auto gelu = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
  check(layer::GELU, {gelu(-2), gelu(-0.5), gelu(0.5), gelu(2)});
  const double z = std::exp(-2.0) + std::exp(-0.5) + std::exp(0.5) + std::exp(2.0);
  check(layer::SOFTMAX, {std::exp(-2.0) / z, std::exp(-0.5) / z, std::exp(0.5) / z, std::exp(2.0) / z});
}

// Every activation (all_activations() follows the op table): its name
// round-trips, and the layer computes its op (softmax over the last axis).
TEST(Activation, EveryActivationIsNamedAndAppliesItsOp) {
  auto x = op::var<double>("x", {2, 3}, {ZERO}, HOST);
  x->set_value(Tensor<double>::from_vector({2, 3}, {-2.0, -0.5, 0.25, 0.5, 1.5, 3.0}, HOST));
  for (layer::activation_t a : layer::all_activations()) {
    const std::string name = layer::activation_name(a);
    SCOPED_TRACE(name);
    EXPECT_EQ(layer::activation_from_name(name), a);
    const std::optional<UnaryOp> u = layer::activation_op(a);
    EXPECT_EQ(u.has_value(), a != layer::SOFTMAX);
    if (u) EXPECT_EQ(name, op_name(*u));
    const auto got = layer::activation(x, a, 0.1)->out()->eval()->to_vector();
    const Tensor<double>& in = *x->eval();
    Tensor<double> ref(in.shape(), HOST);
    if (u) {
      math::unary(*u, in, ref, unary_op_info(*u).param ? 0.1 : 0.0);
    } else {
      math::softmax(in, ref);
    }
    const auto want = ref.to_vector();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_DOUBLE_EQ(got[i], want[i]) << i;
  }
}

TEST(Activation, UnknownNameListsEveryActivation) {
  try {
    layer::activation_from_name("swish");
    FAIL() << "no error for an unknown activation";
  } catch (const ValueError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("\"swish\""), std::string::npos) << what;
    for (layer::activation_t a : layer::all_activations()) {
      EXPECT_NE(what.find(layer::activation_name(a)), std::string::npos) << what;
    }
  }
}

TEST(Flatten, KeepsTheBatchAxisFree) {
  auto in = layer::input<float>({-1, 2, 3, 4}, HOST);
  auto f = layer::flatten(in->out());
  EXPECT_EQ(f->get_output_shape(), Shape({1, 24}));
  in->placeholder()->set_value(Tensor<float>({6, 2, 3, 4}, {ONE}, HOST));
  EXPECT_EQ(f->out()->eval()->shape(), Shape({6, 24}));
  EXPECT_TRUE(f->get_weights().empty());
}

TEST(Output, IsTheIdentityAndAddsNoNode) {
  auto x = op::var<float>("x", {3, 2}, {ONE}, HOST);
  auto o = layer::output(X(x));
  EXPECT_EQ(o->out().get(), x.get());
  EXPECT_EQ(o->type_name(), "Output");
}

TEST(Dropout, TrainAndEvalModes) {
  set_seed(7);
  auto in = layer::input<float>({-1, 100}, HOST);
  in->placeholder()->set_value(Tensor<float>({50, 100}, {ONE}, HOST));
  auto d = layer::dropout(in->out(), 0.3f);
  EXPECT_TRUE(d->is_training());
  const auto train = d->out()->eval()->to_vector();
  int zeros = 0;
  for (float v : train) {
    if (v == 0.0f) {
      ++zeros;
    } else {
      EXPECT_NEAR(v, 1.0f / 0.7f, 1e-5f);  // kept values scaled by 1 / (1 - rate)
    }
  }
  EXPECT_NEAR(double(zeros) / 5000.0, 0.3, 0.03);
  d->set_training(false);
  EXPECT_FALSE(d->is_training());
  for (float v : d->out()->eval()->to_vector()) EXPECT_EQ(v, 1.0f);
  d->set_training(true);
  EXPECT_NE(d->out()->eval()->to_vector(), std::vector<float>(5000, 1.0f));

  EXPECT_THROW(layer::dropout(in->out(), 1.0f), ValueError);
  EXPECT_THROW(layer::dropout(in->out(), -0.1f), ValueError);
  EXPECT_NO_THROW(layer::dropout(in->out(), 0.5f, 12345ull));  // v1 seed argument accepted
}

TEST(BatchNorm, TrainingEvalAndState) {
  auto in = layer::input<double>({-1, 3}, HOST);
  Tensor<double> xb = random_tensor<double>({64, 3}, 30, 1.0, 3.0);  // mean about 2
  in->placeholder()->set_value(xb);
  auto bn = layer::batchnorm(in->out(), 0.5);
  EXPECT_EQ(bn->get_gamma()->output().shape(), Shape({3}));
  EXPECT_EQ(bn->get_beta()->output().shape(), Shape({3}));
  auto state = bn->get_state();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[0].first, bn->get_name() + "/running_mean");
  EXPECT_EQ(state[1].first, bn->get_name() + "/running_var");
  EXPECT_EQ(state[0].second->shape(), Shape({3}));
  EXPECT_EQ(state[1].second->to_vector(), std::vector<double>(3, 1.0));  // available before any forward pass

  // Training: each feature normalized by the batch statistics.
  const Tensor<double>* y = bn->out()->eval();
  double batch_mean[3] = {0, 0, 0};
  for (std::int64_t c = 0; c < 3; ++c) {
    double m = 0, v = 0;
    for (std::int64_t r = 0; r < 64; ++r) m += y->get({r, c}), batch_mean[c] += xb.get({r, c});
    m /= 64;
    batch_mean[c] /= 64;
    for (std::int64_t r = 0; r < 64; ++r) v += (y->get({r, c}) - m) * (y->get({r, c}) - m);
    EXPECT_NEAR(m, 0.0, 1e-9);
    EXPECT_NEAR(v / 64, 1.0, 1e-3);
    // running = 0.5 * 0 + 0.5 * batch mean
    EXPECT_NEAR(state[0].second->get(c), 0.5 * batch_mean[c], 1e-9);
  }

  // Eval: the running statistics, so a single sample is answered alone.
  bn->set_training(false);
  in->placeholder()->set_value(Tensor<double>::from_vector({1, 3}, {2.0, 2.0, 2.0}, HOST));
  const Tensor<double>* y1 = bn->out()->eval();
  ASSERT_EQ(y1->shape(), Shape({1, 3}));
  for (std::int64_t c = 0; c < 3; ++c) {
    const double want = (2.0 - bn->running_mean().get(c)) / std::sqrt(bn->running_var().get(c) + 1e-5);
    EXPECT_NEAR(y1->get({0, c}), want, 1e-9);
  }
  const auto frozen = bn->running_mean().to_vector();
  (void)bn->out()->eval(true);
  EXPECT_EQ(bn->running_mean().to_vector(), frozen);  // eval does not update the statistics
}

TEST(Layer, SetTrainingTouchesOnlyTheLayersOwnNodes) {
  auto in = layer::input<float>({-1, 4}, HOST);
  in->placeholder()->set_value(Tensor<float>({8, 4}, {UNIFORM}, HOST));
  auto d = layer::dropout(in->out(), 0.5f);
  auto bn = layer::batchnorm(d->out());
  bn->set_training(false);
  auto* bn_node = dynamic_cast<op::BatchNormNode<float>*>(bn->out().get());
  auto* d_node = dynamic_cast<op::DropoutNode<float>*>(d->out().get());
  ASSERT_NE(bn_node, nullptr);
  ASSERT_NE(d_node, nullptr);
  EXPECT_FALSE(bn_node->training());
  EXPECT_TRUE(d_node->training());
  d->set_training(false);
  EXPECT_FALSE(d_node->training());
}

TEST(Conv2d, ShapesBatchSizesAndParameters) {
  auto x_batch = op::var<float>("x_batch", {4, 3, 12, 10}, {UNIFORM}, HOST);
  auto in = layer::input<float>(x_batch);
  auto c = layer::conv2d<float>(in->out(), {5, 3}, 8, {1, 1}, {2, 1}, {1, 1}, true, true);
  EXPECT_EQ(c->type_name(), "Conv2D");
  EXPECT_EQ(c->get_filter()->output().shape(), Shape({8, 3, 5, 3}));
  ASSERT_TRUE(c->get_bias());
  EXPECT_EQ(c->get_bias()->output().shape(), Shape({8}));
  EXPECT_EQ(c->num_params(), 8 * 3 * 5 * 3 + 8);
  // P = (12 + 2 - 5) / 2 + 1 = 5, Q = (10 + 2 - 3) / 1 + 1 = 10
  EXPECT_EQ(c->get_output_shape(), Shape({4, 8, 5, 10}));
  for (std::int64_t n : {7, 1}) {
    in->placeholder()->set_value(Tensor<float>({n, 3, 12, 10}, {UNIFORM}, HOST));
    EXPECT_EQ(c->out()->eval()->shape(), Shape({n, 8, 5, 10}));
  }
  // v1 default: no bias.
  auto nb = layer::conv2d<float>(in->out(), {3, 3}, 2);
  EXPECT_FALSE(nb->get_bias());
  EXPECT_EQ(nb->get_weights().size(), 1u);
  // SAME keeps the size at stride 1; VALID pads nothing.
  EXPECT_EQ(layer::conv2d<float>(in->out(), {3, 5}, 2, layer::SAME)->get_output_shape(), Shape({1, 2, 12, 10}));
  EXPECT_EQ(layer::conv2d<float>(in->out(), {3, 5}, 2, layer::VALID)->get_output_shape(), Shape({1, 2, 10, 6}));
  EXPECT_THROW(layer::conv2d<float>(in->out(), {2, 2}, 2, layer::SAME), ValueError);
  EXPECT_THROW(layer::conv2d<float>(in->out(), {3, 3, 3}, 2), ValueError);
  auto flat = layer::flatten(in->out());
  EXPECT_THROW(layer::conv2d<float>(flat->out(), {3, 3}, 2), ShapeError);
}

TEST(Conv2d, ComputesACrossCorrelation) {
  auto x = op::var<double>("x", {1, 1, 3, 3}, {ZERO}, HOST);
  x->set_value(Tensor<double>::from_vector({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, HOST));
  auto c = layer::conv2d<double>(x, {2, 2}, 1, {0, 0}, {1, 1}, {1, 1}, true, true);
  c->get_filter()->set_value(Tensor<double>::from_vector({1, 1, 2, 2}, {1, 0, 0, -1}, HOST));
  c->get_bias()->set_value(Tensor<double>::from_vector({1}, {10}, HOST));
  EXPECT_EQ(c->out()->eval()->to_vector(), std::vector<double>({6, 6, 6, 6}));  // x[i][j] - x[i+1][j+1] + 10
}

TEST(Conv2d, GlorotHeAndReproducibleInit) {
  auto x = op::var<float>("x", {1, 32, 8, 8}, {ZERO}, HOST);
  const double fan_in = 32 * 9, fan_out = 64 * 9;
  set_seed(5);
  auto g = layer::conv2d<float>(x, {3, 3}, 64);
  const Stats gs = stats_of(g->get_filter()->output());
  EXPECT_LE(gs.max_abs, std::sqrt(6.0 / (fan_in + fan_out)) + 1e-6);
  EXPECT_NEAR(gs.var, 2.0 / (fan_in + fan_out), 0.05 * 2.0 / (fan_in + fan_out));
  auto h = layer::conv2d<float>(x, {3, 3}, 64, {1, 1}, {1, 1}, {1, 1}, true, false, layer::init_for<float>(layer::RELU));
  EXPECT_NEAR(stats_of(h->get_filter()->output()).var, 2.0 / fan_in, 0.05 * 2.0 / fan_in);
  set_seed(5);
  auto g2 = layer::conv2d<float>(x, {3, 3}, 64);
  EXPECT_EQ(g2->get_filter()->output().to_vector(), g->get_filter()->output().to_vector());
}

TEST(Pooling, ShapesModesAndValues) {
  auto x = op::var<float>("x", {2, 1, 4, 4}, {ZERO}, HOST);
  std::vector<float> v(32);
  for (int i = 0; i < 32; ++i) v[i] = float(i);
  x->set_value(Tensor<float>::from_vector({2, 1, 4, 4}, v, HOST));
  auto in = layer::input<float>(x);
  auto mx = layer::pooling<float>(in->out(), {2, 2}, {0, 0}, {2, 2}, MAX_POOL);
  auto av = layer::pooling<float>(in->out(), {2, 2}, {0, 0}, {2, 2}, AVERAGE_POOL);
  EXPECT_EQ(mx->type_name(), "Pooling2D");
  EXPECT_TRUE(mx->get_weights().empty());
  EXPECT_EQ(mx->out()->eval()->to_vector(),
            std::vector<float>({5, 7, 13, 15, 21, 23, 29, 31}));
  EXPECT_EQ(av->out()->eval()->to_vector(), std::vector<float>({2.5f, 4.5f, 10.5f, 12.5f, 18.5f, 20.5f, 26.5f, 28.5f}));
  // v1 defaults: 2x2 window, stride 1.
  EXPECT_EQ(layer::pooling<float>(in->out())->get_output_shape(), Shape({2, 1, 3, 3}));
  in->placeholder()->set_value(Tensor<float>({5, 1, 4, 4}, {ONE}, HOST));
  EXPECT_EQ(av->out()->eval()->shape(), Shape({5, 1, 2, 2}));
  EXPECT_THROW(layer::pooling<float>(in->out(), {0, 2}), ValueError);
}
