// LARS and LAMB: two steps against a computation by hand (a second,
// scalar implementation of the papers' formulas in double), the trust ratio
// at zero weights and zero gradients, the exclusion of vector parameters,
// and the factory path.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "magmadnn/compute/compute.h"
#include "magmadnn/optimizer/optimizer.h"

using namespace magmadnn;

namespace {

op::Var<double> var_of(const char* name, const Shape& shape, const std::vector<double>& values) {
  auto v = op::var<double>(name, shape, {ZERO}, HOST);
  v->value().copy_from(Tensor<double>::from_vector(shape, values));
  return v;
}

// loss = sum((x - t)^2): the gradient is 2 (x - t), exactly, so the steps can
// be followed by hand. Returns x after each of `steps` steps.
std::vector<std::vector<double>> run(optimizer::Optimizer<double>& opt, const std::vector<double>& x0,
                                     const std::vector<double>& t, int steps, const Shape& shape) {
  auto x = var_of("x", shape, x0);
  auto tc = op::constant<double>("t", Tensor<double>::from_vector(shape, t, HOST));
  auto loss = op::reduce_sum(op::pow(op::sub(x, tc), 2));
  std::vector<std::vector<double>> xs;
  for (int i = 0; i < steps; ++i) {
    opt.minimize(loss, {x});
    xs.push_back(x->value().to_vector());
  }
  return xs;
}

double norm(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e * e;
  return std::sqrt(s);
}

bool all_finite(const std::vector<double>& v) {
  for (double e : v) {
    if (!std::isfinite(e)) return false;
  }
  return true;
}

}  // namespace

// w = (3, 4), ||w|| = 5; g = 2 (w - t) = (0.6, 0.8), ||g|| = 1.
TEST(Lars, TwoStepsMatchTheHandComputation) {
  optimizer::Lars<double> lars(0.1, {.momentum = 0.9, .weight_decay = 0.1, .trust_coefficient = 0.01});
  const std::vector<double> t{2.7, 3.6};
  const auto xs = run(lars, {3.0, 4.0}, t, 2, {2});
  // Step 1 by hand: trust = 0.01 * 5 / (1 + 0.1 * 5) = 1/30; g + 0.1 w = (0.9, 1.2);
  // v = 0.1 / 30 * (0.9, 1.2) = (0.003, 0.004); w = (2.997, 3.996).
  EXPECT_NEAR(xs[0][0], 2.997, 1e-15);
  EXPECT_NEAR(xs[0][1], 3.996, 1e-15);
  // Step 2 from the formulas: v = 0.9 v + lr trust (g + beta w).
  std::vector<double> w{2.997, 3.996}, v{0.003, 0.004}, g(2);
  for (int i = 0; i < 2; ++i) g[i] = 2 * (w[i] - t[i]);
  const double trust = 0.01 * norm(w) / (norm(g) + 0.1 * norm(w));
  for (int i = 0; i < 2; ++i) {
    v[i] = 0.9 * v[i] + 0.1 * trust * (g[i] + 0.1 * w[i]);
    w[i] -= v[i];
  }
  EXPECT_NEAR(xs[1][0], w[0], 1e-14);
  EXPECT_NEAR(xs[1][1], w[1], 1e-14);
  EXPECT_NE(xs[1][0], 2.997 - 0.003);  // the momentum and the new trust ratio count
}

TEST(Lars, TrustRatioIsOneAtZeroWeightsOrZeroGradient) {
  optimizer::Lars<double> lars(0.5, {.momentum = 0.0, .weight_decay = 0.01, .trust_coefficient = 0.001});
  const Tensor<double> zero = Tensor<double>::from_vector({2}, {0.0, 0.0});
  const Tensor<double> some = Tensor<double>::from_vector({2}, {3.0, 4.0});
  EXPECT_EQ(lars.trust_ratio(zero, some), 1.0);
  EXPECT_EQ(lars.trust_ratio(some, zero), 1.0);
  EXPECT_EQ(lars.trust_ratio(zero, zero), 1.0);
  EXPECT_NEAR(lars.trust_ratio(some, some), 0.001 * 5 / (5 + 0.01 * 5), 1e-18);
  // Zero weights: a plain step of lr * g (no 0/0): x = 0 - 0.5 * 2 (0 - t).
  auto xs = run(lars, {0.0, 0.0}, {1.0, -2.0}, 1, {2});
  EXPECT_DOUBLE_EQ(xs[0][0], 1.0);
  EXPECT_DOUBLE_EQ(xs[0][1], -2.0);
  // Zero gradient (x at the target): only the decay, finite.
  optimizer::Lars<double> at_rest(0.5, {.momentum = 0.9, .weight_decay = 0.01});
  xs = run(at_rest, {1.0, 2.0}, {1.0, 2.0}, 3, {2});
  for (const auto& x : xs) EXPECT_TRUE(all_finite(x));
  EXPECT_LT(xs[0][0], 1.0);
}

TEST(Lars, ExcludedVectorsTakeThePlainMomentumStepWithoutDecay) {
  optimizer::LarsOptions o{.momentum = 0.9, .weight_decay = 0.1, .trust_coefficient = 0.01, .exclude_vectors = true};
  optimizer::Lars<double> lars(0.1, o);
  // A bias-like {2} tensor: x = w - lr g exactly, no trust ratio, no decay.
  auto xs = run(lars, {3.0, 4.0}, {2.7, 3.6}, 1, {2});
  EXPECT_NEAR(xs[0][0], 3.0 - 0.1 * 0.6, 1e-15);
  EXPECT_NEAR(xs[0][1], 4.0 - 0.1 * 0.8, 1e-15);
  // The same values as a {1, 2} matrix are adapted (step 1 of the hand test).
  optimizer::Lars<double> matrix(0.1, o);
  xs = run(matrix, {3.0, 4.0}, {2.7, 3.6}, 1, {1, 2});
  EXPECT_NEAR(xs[0][0], 2.997, 1e-15);
}

// LAMB on the same problem: m-hat = g and v-hat = g^2 after one step.
TEST(Lamb, TwoStepsMatchTheHandComputation) {
  const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-6, wd = 0.1;
  optimizer::Lamb<double> lamb(lr, {.beta1 = b1, .beta2 = b2, .epsilon = eps, .weight_decay = wd});
  const std::vector<double> t{2.7, 3.6};
  const auto xs = run(lamb, {3.0, 4.0}, t, 2, {2});
  // Step 1 by hand: u = g / (|g| + eps) + 0.1 w ~ (1.3, 1.4); trust = 5 / ||u||.
  {
    const double u0 = 0.6 / (0.6 + eps) + 0.3, u1 = 0.8 / (0.8 + eps) + 0.4;
    const double trust = 5.0 / std::sqrt(u0 * u0 + u1 * u1);
    EXPECT_NEAR(trust, 5.0 / std::sqrt(3.65), 1e-5);
    EXPECT_NEAR(xs[0][0], 3.0 - lr * trust * u0, 1e-14);
    EXPECT_NEAR(xs[0][1], 4.0 - lr * trust * u1, 1e-14);
  }
  // Both steps from the formulas.
  std::vector<double> w{3.0, 4.0}, m(2, 0.0), v(2, 0.0), u(2);
  for (int step = 1; step <= 2; ++step) {
    for (int i = 0; i < 2; ++i) {
      const double g = 2 * (w[i] - t[i]);
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      u[i] = (m[i] / (1 - std::pow(b1, step))) / (std::sqrt(v[i] / (1 - std::pow(b2, step))) + eps) + wd * w[i];
    }
    const double trust = norm(w) / norm(u);
    for (int i = 0; i < 2; ++i) w[i] -= lr * trust * u[i];
  }
  EXPECT_NEAR(xs[1][0], w[0], 1e-13);
  EXPECT_NEAR(xs[1][1], w[1], 1e-13);
}

TEST(Lamb, TrustRatioIsOneAtZeroWeightsOrZeroStep) {
  optimizer::Lamb<double> lamb(0.1);
  // Zero weights: trust 1, the plain Adam-like step of length lr per element.
  auto xs = run(lamb, {0.0, 0.0}, {1.0, -2.0}, 1, {2});
  EXPECT_EQ(lamb.last_trust_ratio(), 1.0);
  EXPECT_NEAR(xs[0][0], 0.1, 1e-6);
  EXPECT_NEAR(xs[0][1], -0.1, 1e-6);
  // Zero gradient and no decay: u = 0, nothing moves, nothing is NaN.
  optimizer::Lamb<double> still(0.1);
  xs = run(still, {1.0, 2.0}, {1.0, 2.0}, 3, {2});
  EXPECT_EQ(still.last_trust_ratio(), 1.0);
  EXPECT_EQ(xs[2], (std::vector<double>{1.0, 2.0}));
  // Excluded vectors: the Adam step without decay or trust ratio.
  optimizer::Lamb<double> plain(0.1, {.weight_decay = 0.5, .exclude_vectors = true});
  xs = run(plain, {3.0, 4.0}, {2.7, 3.6}, 1, {2});
  EXPECT_EQ(plain.last_trust_ratio(), 1.0);
  EXPECT_NEAR(xs[0][0], 3.0 - 0.1, 1e-6);
}

TEST(LarsLamb, FactoryBuildsThemWithEverySetting) {
  optimizer::OptimizerSettings s;
  s.learning_rate = 0.1;
  s.kind = optimizer::kind_from_name("lars");
  s.momentum = 0.9;
  s.weight_decay = 0.1;
  s.trust_coefficient = 0.01;
  auto lars = optimizer::make<double>(s);
  ASSERT_NE(dynamic_cast<optimizer::Lars<double>*>(lars.get()), nullptr);
  EXPECT_EQ(run(*lars, {3.0, 4.0}, {2.7, 3.6}, 1, {2})[0][0], [] {
    optimizer::Lars<double> hand(0.1, {.momentum = 0.9, .weight_decay = 0.1, .trust_coefficient = 0.01});
    return run(hand, {3.0, 4.0}, {2.7, 3.6}, 1, {2})[0][0];
  }());
  EXPECT_EQ(optimizer::name_of(optimizer::LARS), "lars");
  s.kind = optimizer::kind_from_name("lamb");
  s.beta1 = 0.8;
  s.epsilon = 1e-4;
  auto lamb = optimizer::make<double>(s);
  auto* as_lamb = dynamic_cast<optimizer::Lamb<double>*>(lamb.get());
  ASSERT_NE(as_lamb, nullptr);
  EXPECT_EQ(as_lamb->options().beta1, 0.8);
  EXPECT_EQ(as_lamb->options().epsilon, 1e-4);
  EXPECT_EQ(as_lamb->options().weight_decay, 0.1);
  EXPECT_THROW(optimizer::Lars<double>(0.1, {.momentum = 1.0}), ValueError);
  EXPECT_THROW(optimizer::Lars<double>(0.1, {.trust_coefficient = 0.0}), ValueError);
  EXPECT_THROW(optimizer::Lamb<double>(0.1, {.epsilon = 0.0}), ValueError);
}

TEST(LarsLamb, StateSlotsAreNamedLikeSgdsAndAdams) {
  auto x = var_of("w", {2}, {1.0, 2.0});
  auto loss = op::reduce_sum(op::pow(x, 2));
  optimizer::Lars<double> lars(0.1);
  lars.minimize(loss, {x});
  EXPECT_EQ(lars.state().size(), 1u);
  EXPECT_TRUE(lars.state().count("w/velocity"));
  optimizer::Lamb<double> lamb(0.1);
  lamb.minimize(loss, {x});
  EXPECT_TRUE(lamb.state().count("w/m"));
  EXPECT_TRUE(lamb.state().count("w/v"));
}
