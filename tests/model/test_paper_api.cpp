// The paper's Model form, the slides' NeuralNetwork form from int / int /
// float variables and nn_params_t's checked constructors (api_forms.cpp
// holds the forms themselves, exactly as users write them).
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "api_forms.h"
#include "model_test_util.h"

using namespace magmadnn;
using namespace mtest;

namespace {

// The message of the ValueError `make` throws ("" when it throws none).
template <typename F>
std::string value_error(F make) {
  try {
    make();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(PaperApi, ModelFromParamsAndLayersTrainsAndFillsOut) {
  set_seed(11);
  Tensor<float> x, y;
  blobs<float>(120, 4, x, y, 5, 3.0);
  testing::internal::CaptureStdout();
  const api_forms::FormRun run = api_forms::paper_form(x, y, /*verbose=*/true);
  const std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_NE(printed.find("epoch 5/5"), std::string::npos) << printed;
  EXPECT_EQ(run.rc, 0);
  EXPECT_EQ(run.out.epochs, 5u);
  EXPECT_EQ(run.history, 5u);
  EXPECT_GT(run.out.training_time, 0.0);
  EXPECT_GT(run.out.samples_per_second, 0.0);
  EXPECT_TRUE(std::isfinite(run.out.loss));
  EXPECT_GT(run.out.accuracy, 0.9);  // well-separated blobs
  EXPECT_LT(run.loss_after, 0.5 * run.loss_before) << "before " << run.loss_before;
  EXPECT_EQ(run.params.loss, optimizer::CROSS_ENTROPY);  // the defaults, taken from params
  EXPECT_EQ(run.params.optimizer, optimizer::SGD);
  EXPECT_EQ(run.params.batch_size, 10u);
}

TEST(PaperApi, SlidesNeuralNetworkFromIntIntFloatVariables) {
  set_seed(12);
  Tensor<float> x, y;
  blobs<float>(96, 3, x, y, 6, 3.0);
  const int batch_size = 16;
  const int n_epochs = 4;
  const float learning_rate = 0.05f;
  const api_forms::FormRun run = api_forms::slides_form(x, y, batch_size, n_epochs, learning_rate);
  EXPECT_EQ(run.rc, 0);
  EXPECT_EQ(run.params.batch_size, 16u);
  EXPECT_EQ(run.params.n_epochs, 4u);
  EXPECT_EQ(run.params.learning_rate, static_cast<double>(0.05f));
  EXPECT_EQ(run.params.optimizer, optimizer::ADAM);  // recorded from the constructor argument
  EXPECT_EQ(run.out.epochs, 4u);
  EXPECT_EQ(run.history, 4u);
  EXPECT_LT(run.loss_after, run.loss_before);
  EXPECT_GT(run.out.accuracy, 0.8);
}

TEST(PaperApi, SharedLayersDoubleAndPointerFit) {
  set_seed(13);
  Tensor<double> x, y;
  blobs<double>(60, 2, x, y, 7, 3.0);
  const api_forms::FormRun run = api_forms::paper_form_shared(&x, &y, std::int64_t{10}, std::size_t{3}, 0.05);
  EXPECT_EQ(run.rc, 0);
  EXPECT_EQ(run.history, 6u);    // two fits of 3 epochs
  EXPECT_EQ(run.out.epochs, 3u);  // the second fit's summary
  EXPECT_EQ(run.params.optimizer, optimizer::ADAM);
  EXPECT_EQ(run.params.n_epochs, 3u);
  EXPECT_LT(run.loss_after, run.loss_before);
}

TEST(PaperApi, ModelTakesLossAndOptimizerFromParams) {
  set_seed(14);
  model::nn_params_t p{8, 1, 0.01};
  p.loss = optimizer::MSE;
  p.optimizer = optimizer::RMSPROP;
  Model m(p, mlp<float>(2, 4, 2));  // deduces Model<float> from shared layers
  static_assert(std::is_same_v<decltype(m), model::Model<float>>);
  EXPECT_NE(m.summary().find("rmsprop"), std::string::npos) << m.summary();
  EXPECT_EQ(m.params().loss, optimizer::MSE);
  EXPECT_EQ(m.params().optimizer, optimizer::RMSPROP);
  // NeuralNetwork's own fit forms stay available on a Model.
  Tensor<float> x, y;
  blobs<float>(16, 2, x, y);
  model::metric_t m1;
  EXPECT_EQ(m.fit(x, y, m1, false), 0);
  EXPECT_EQ(m.fit(x, y).size(), 2u);
}

TEST(PaperApi, ModelFitErrorsLeaveOutUnchanged) {
  set_seed(15);
  Model m(model::nn_params_t{8, 1, 0.1}, mlp<float>(2, 4, 2));
  Tensor<float> x, y, wrong_y;
  blobs<float>(16, 2, x, y);
  wrong_y = Tensor<float>({15, 2}, {ZERO});
  model::metric_t out;
  out.epochs = 42;
  EXPECT_ANY_THROW(m.fit(x, wrong_y, false, &out));
  EXPECT_EQ(out.epochs, 42u);
  EXPECT_THROW(m.fit(nullptr, &y, false, &out), ValueError);
  EXPECT_THROW(m.fit(&x, nullptr, false), ValueError);
  EXPECT_EQ(out.epochs, 42u);
  EXPECT_EQ(m.fit(&x, &y, false, &out), 0);
  EXPECT_EQ(out.epochs, 1u);

  model::nn_params_t zero;  // a field set by name is checked by the model
  zero.batch_size = 0;
  EXPECT_THROW(Model(zero, mlp<float>(2, 4, 2)), ValueError);
}

TEST(NnParams, EveryCountAndRateTypeGivesTheSameParams) {
  const auto all = api_forms::count_forms(24, 7, 0.25);
  ASSERT_EQ(all.size(), 6u);
  for (std::size_t i = 0; i + 1 < all.size(); ++i) {
    EXPECT_EQ(all[i].batch_size, 24u) << "form " << i;
    EXPECT_EQ(all[i].n_epochs, 7u) << "form " << i;
    EXPECT_EQ(all[i].learning_rate, i == 4 ? model::nn_params_t().learning_rate : 0.25) << "form " << i;
    EXPECT_EQ(all[i].momentum, 0.0);
    EXPECT_TRUE(all[i].shuffle);
    EXPECT_EQ(all[i].loss, optimizer::CROSS_ENTROPY);
    EXPECT_EQ(all[i].optimizer, optimizer::SGD);
  }
  EXPECT_EQ(all.back().batch_size, 100u);
  EXPECT_EQ(all.back().n_epochs, 10u);
  EXPECT_EQ(all.back().learning_rate, 0.05);

  model::nn_params_t v1;  // v1: defaults, then fields by name
  EXPECT_EQ(v1.batch_size, 32u);
  EXPECT_EQ(v1.n_epochs, 1u);
  v1.batch_size = 64;
  v1.learning_rate = 0.1;
  EXPECT_EQ(v1.batch_size, 64u);
}

TEST(NnParams, ConstructorsAreConstrained) {
  using P = model::nn_params_t;
  static_assert(std::is_constructible_v<P, int, int, float>);
  static_assert(std::is_constructible_v<P, std::size_t, std::int64_t, double>);
  static_assert(std::is_constructible_v<P, unsigned, unsigned>);
  static_assert(!std::is_convertible_v<int, P>, "a lone number is not params");
  static_assert(!std::is_constructible_v<P, double, int, double>, "a batch size must be an integer");
  static_assert(!std::is_constructible_v<P, int, float, double>, "an epoch count must be an integer");
  static_assert(!std::is_constructible_v<P, bool, int, double>);
  static_assert(!std::is_constructible_v<P, int, int, bool>);
  static_assert(std::is_trivially_copyable_v<P>);
  SUCCEED();
}

TEST(NnParams, OutOfRangeValuesNameTheFieldAndValue) {
  using P = model::nn_params_t;
  const int negative = -3;
  std::string msg = value_error([&] { return P{negative, 10, 0.1}; });
  EXPECT_NE(msg.find("batch_size"), std::string::npos) << msg;
  EXPECT_NE(msg.find("-3"), std::string::npos) << msg;

  const std::int64_t zero = 0;
  msg = value_error([&] { return P{32, zero, 0.1}; });
  EXPECT_NE(msg.find("n_epochs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("got 0"), std::string::npos) << msg;

  const std::size_t huge = std::size_t{1} << 40;
  msg = value_error([&] { return P{huge, 1}; });
  EXPECT_NE(msg.find("batch_size"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1099511627776"), std::string::npos) << msg;

  const signed char small = -1;
  msg = value_error([&] { return P{8, small, 0.1}; });
  EXPECT_NE(msg.find("n_epochs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("got -1"), std::string::npos) << msg;

  msg = value_error([&] { return P{8, 1, -0.5f}; });
  EXPECT_NE(msg.find("learning_rate"), std::string::npos) << msg;
  EXPECT_NE(msg.find("-0.5"), std::string::npos) << msg;

  msg = value_error([&] { return P{8, 1, std::numeric_limits<double>::quiet_NaN()}; });
  EXPECT_NE(msg.find("learning_rate"), std::string::npos) << msg;

  const unsigned max_u = std::numeric_limits<unsigned>::max();
  EXPECT_EQ((P{max_u, 1u}.batch_size), max_u);  // the largest value that fits
}
