// optimizer::make: one factory for NeuralNetwork and the command line.
#include <gtest/gtest.h>

#include "magmadnn.h"

using namespace magmadnn;

TEST(OptimizerFactory, NamesRoundTripInEnumOrder) {
  const auto& names = optimizer::kind_names();
  ASSERT_EQ(names.size(), 7u);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto kind = static_cast<optimizer::optimizer_t>(i);
    EXPECT_EQ(optimizer::name_of(kind), names[i]);
    EXPECT_EQ(optimizer::kind_from_name(names[i]), kind);
    optimizer::OptimizerSettings s;
    s.kind = kind;
    EXPECT_NE(optimizer::make<float>(s), nullptr);
  }
  EXPECT_EQ(optimizer::name_of(optimizer::RMSPROP), "rmsprop");
  try {
    optimizer::kind_from_name("sdg");
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown optimizer \"sdg\" (known: sgd, adam, adagrad, rmsprop, adamw, lars, lamb)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(optimizer::name_of(static_cast<optimizer::optimizer_t>(7)), ValueError);
}

// One step on the same parameter and gradient: the factory's optimizer and
// the hand-built one move it identically, with every setting honoured.
template <class Built>
void expect_same_step(const optimizer::OptimizerSettings& s, Built hand) {
  auto run = [](optimizer::Optimizer<double>& opt) {
    auto w = op::var<double>("w", {3}, {CONSTANT, 1.0});
    auto loss = op::pow(w, 2);
    for (int i = 0; i < 3; ++i) opt.minimize(loss, {w});
    return w->value().to_vector();
  };
  auto made = optimizer::make<double>(s);
  EXPECT_EQ(run(*made), run(hand));
}

TEST(OptimizerFactory, EverySettingReachesTheOptimizer) {
  optimizer::OptimizerSettings s;
  s.learning_rate = 0.1;
  s.kind = optimizer::RMSPROP;
  s.rho = 0.5;
  s.epsilon = 1e-3;
  expect_same_step(s, optimizer::RMSProp<double>(0.1, 0.5, 1e-3));
  s.kind = optimizer::ADAM;
  s.beta1 = 0.7;
  s.beta2 = 0.9;
  expect_same_step(s, optimizer::Adam<double>(0.1, 0.7, 0.9, 1e-3));
  s.kind = optimizer::SGD;
  s.momentum = 0.5;
  s.nesterov = true;
  s.weight_decay = 0.01;
  optimizer::GradientDescent<double> sgd(0.1, 0.5, true);
  sgd.set_weight_decay(0.01);
  expect_same_step(s, sgd);
}

TEST(OptimizerFactory, NeuralNetworkBuildsItsOptimizerFromItsParams) {
  // decaying_factor is RMSProp's rho on this path too (the two used to differ).
  model::nn_params_t p{4, 1, 0.1};
  p.decaying_factor = 0.5;
  p.epsilon = 1e-3;
  EXPECT_EQ(p.optimizer_settings().rho, 0.5);
  EXPECT_EQ(p.optimizer_settings().epsilon, 1e-3);
  optimizer::OptimizerSettings s = p.optimizer_settings();
  s.kind = optimizer::ADAMW;
  s.beta2 = 0.95;
  model::nn_params_t q;
  q.set_optimizer_settings(s);
  EXPECT_EQ(q.optimizer, optimizer::ADAMW);
  EXPECT_EQ(q.decaying_factor, 0.5);
  EXPECT_EQ(q.beta2, 0.95);
  EXPECT_EQ(q.learning_rate, 0.1);
}
