// Each optimizer: one step matches a hand computation, and many steps
// minimize a quadratic. Weight decay in both forms; state for checkpoints.
#include <gtest/gtest.h>

#include <cmath>

#include "magmadnn/compute/compute.h"
#include "magmadnn/optimizer/optimizer.h"

using namespace magmadnn;

namespace {
// f(x) = x^2 for a scalar x starting at x0; returns x after `steps` steps.
template <typename Opt>
std::vector<double> run_square(Opt& opt, double x0, int steps) {
  auto x = op::var<double>("x", {CONSTANT, x0});
  auto f = op::pow(x, 2);
  std::vector<double> xs;
  for (int i = 0; i < steps; ++i) {
    opt.minimize(f, {x});
    xs.push_back(x->value().get(std::int64_t{0}));
  }
  return xs;
}

// sum((x - t)^2) over a vector, from x = 0; returns the final loss.
template <typename Opt>
double run_quadratic(Opt& opt, int steps) {
  auto x = op::var<double>("x", {4}, {ZERO, {}});
  auto t = op::constant<double>("t", Tensor<double>::from_vector({4}, {1.0, -2.0, 0.5, 3.0}));
  auto loss = op::reduce_sum(op::pow(op::sub(x, t), 2));
  const double start = loss->eval()->get(std::int64_t{0});
  for (int i = 0; i < steps; ++i) opt.minimize(loss, {x});
  const double end = loss->eval()->get(std::int64_t{0});
  EXPECT_GT(start, 10.0);
  return end;
}
}  // namespace

TEST(GradientDescent, HandStep) {
  optimizer::GradientDescent<double> opt(0.1);
  auto xs = run_square(opt, 3.0, 2);
  EXPECT_NEAR(xs[0], 2.4, 1e-12);
  EXPECT_NEAR(xs[1], 1.92, 1e-12);
  EXPECT_EQ(opt.step_count(), 2);
}

TEST(GradientDescent, MomentumAndNesterovHandSteps) {
  optimizer::Momentum<double> mom(0.1, 0.9);
  auto xs = run_square(mom, 3.0, 2);
  EXPECT_NEAR(xs[0], 2.4, 1e-12);
  EXPECT_NEAR(xs[1], 2.4 - 0.1 * (0.9 * 6.0 + 4.8), 1e-12);
  optimizer::Nesterov<double> nes(0.1, 0.9);
  xs = run_square(nes, 3.0, 1);
  EXPECT_NEAR(xs[0], 3.0 - 0.1 * (6.0 + 0.9 * 6.0), 1e-12);
}

TEST(Adaptive, HandSteps) {
  optimizer::Adam<double> adam(0.1);
  EXPECT_NEAR(run_square(adam, 3.0, 1)[0], 3.0 - 0.1 * 6.0 / (6.0 + 1e-8), 1e-12);
  optimizer::AdaGrad<double> ada(0.1);
  auto xs = run_square(ada, 3.0, 2);
  EXPECT_NEAR(xs[0], 2.9, 1e-9);
  EXPECT_NEAR(xs[1], 2.9 - 0.1 * 5.8 / (std::sqrt(36.0 + 5.8 * 5.8) + 1e-10), 1e-9);
  optimizer::RMSProp<double> rms(0.1, 0.99);
  EXPECT_NEAR(run_square(rms, 3.0, 1)[0], 3.0 - 0.1 * 6.0 / (0.6 + 1e-8), 1e-9);
}

TEST(Optimizers, AllMinimizeAQuadratic) {
  optimizer::GradientDescent<double> gd(0.1);
  EXPECT_LT(run_quadratic(gd, 100), 1e-8);
  optimizer::Momentum<double> mom(0.05, 0.9);
  EXPECT_LT(run_quadratic(mom, 300), 1e-8);
  optimizer::Nesterov<double> nes(0.05, 0.9);
  EXPECT_LT(run_quadratic(nes, 300), 1e-8);
  optimizer::Adam<double> adam(0.1);
  EXPECT_LT(run_quadratic(adam, 500), 1e-4);
  optimizer::AdaGrad<double> ada(0.5);
  EXPECT_LT(run_quadratic(ada, 500), 1e-4);
  optimizer::RMSProp<double> rms(0.01);
  EXPECT_LT(run_quadratic(rms, 1000), 1e-3);
}

TEST(Optimizers, FloatDefaultsCompileAndWork) {
  optimizer::Adam adam(0.1);  // Adam<float>
  auto x = op::var<float>("x", {CONSTANT, 2.0f});
  for (int i = 0; i < 300; ++i) adam.minimize(op::pow(x, 2), {x});
  EXPECT_LT(std::abs(x->value().get(std::int64_t{0})), 0.05f);
}

TEST(WeightDecay, L2VersusDecoupled) {
  optimizer::Adam<double> l2(0.1);
  l2.set_weight_decay(0.1, optimizer::WeightDecay::L2);
  EXPECT_NEAR(run_square(l2, 3.0, 1)[0], 3.0 - 0.1 * 6.3 / (6.3 + 1e-8), 1e-12);
  optimizer::AdamW<double> adamw(0.1, 0.1);
  EXPECT_NEAR(run_square(adamw, 3.0, 1)[0], 3.0 * (1 - 0.1 * 0.1) - 0.1 * 6.0 / (6.0 + 1e-8), 1e-12);
  optimizer::GradientDescent<double> gd(0.1);
  gd.set_weight_decay(0.5);
  EXPECT_NEAR(run_square(gd, 3.0, 1)[0], 3.0 - 0.1 * (6.0 + 1.5), 1e-12);
}

TEST(Optimizers, ScheduleIsQueriedEachStep) {
  optimizer::GradientDescent<double> gd(0.1);
  gd.set_schedule(std::make_shared<optimizer::StepLR>(1, 0.5));
  auto xs = run_square(gd, 3.0, 2);
  EXPECT_NEAR(xs[0], 3.0 - 0.1 * 6.0, 1e-12);
  EXPECT_NEAR(xs[1], 2.4 - 0.05 * 4.8, 1e-12);
  EXPECT_NEAR(gd.learning_rate(), 0.025, 1e-15);
}

TEST(Optimizers, StateIsNamedAndWritable) {
  optimizer::Adam<double> adam(0.1);
  auto w = op::var<double>("w", {CONSTANT, 3.0});
  adam.minimize(op::pow(w, 2), {w});
  auto st = adam.state();
  ASSERT_EQ(st.size(), 2u);
  ASSERT_TRUE(st.count("w/m") && st.count("w/v"));
  EXPECT_NEAR(st["w/m"]->get(std::int64_t{0}), 0.6, 1e-12);
  EXPECT_NEAR(st["w/v"]->get(std::int64_t{0}), 0.036, 1e-12);
  optimizer::GradientDescent<double> plain(0.1);
  plain.minimize(op::pow(w, 2), {w});
  EXPECT_TRUE(plain.state().empty());
}

TEST(Optimizers, RejectsNonVariables) {
  optimizer::GradientDescent<double> gd(0.1);
  auto x = op::var<double>("x", {CONSTANT, 1.0});
  auto y = op::exp(x);
  EXPECT_THROW(gd.minimize(op::pow(y, 2), {y}), ValueError);
}

TEST(Optimizers, UpdatedVariableTriggersRecompute) {
  optimizer::GradientDescent<double> gd(0.1);
  auto x = op::var<double>("x", {CONSTANT, 1.0});
  auto e = op::exp(x);
  e->eval();
  gd.minimize(op::pow(x, 2), {x});
  EXPECT_NEAR(e->eval()->get(std::int64_t{0}), std::exp(0.8), 1e-12);
}
