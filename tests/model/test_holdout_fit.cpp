// The held-out validation samples never reach a training step.
#include <set>

#include "magmadnn/data/holdout.h"
#include "model_test_util.h"

using namespace magmadnn;
using namespace mtest;

TEST(HoldoutFit, TheModelNeverStepsOnAValidationSample) {
  set_seed(13);
  const std::int64_t n = 200;
  Tensor<double> x, y;
  blobs<double>(n, 3, x, y);
  for (std::int64_t i = 0; i < n; ++i) x.set({i, 2}, static_cast<double>(i));  // column 2: sample id
  const auto h = data::holdout_split(n, 0.25, 99);
  const Tensor<double> xt = data::take_rows(x, h.train), yt = data::take_rows(y, h.train);
  const Tensor<double> xv = data::take_rows(x, h.validation), yv = data::take_rows(y, h.validation);

  model::nn_params_t p{16, 3, 0.05};
  model::NeuralNetwork<double> net(mlp<double>(3, 5, 2), optimizer::CROSS_ENTROPY, optimizer::SGD, p);
  std::set<std::int64_t> stepped_on;
  PluginProbe<double> probe;
  probe.finished = [&](const std::vector<Tensor<double>*>&) {
    const Tensor<double>& xb = net.input()->output();
    for (std::int64_t r = 0; r < xb.shape()[0]; ++r) stepped_on.insert(static_cast<std::int64_t>(xb.get({r, 2})));
  };
  probe.attach(net);
  model::FitOptions<double> o;
  o.validation_x = &xv;
  o.validation_y = &yv;
  const auto hist = net.fit(xt, yt, o);

  ASSERT_EQ(hist.size(), 3u);
  EXPECT_TRUE(std::isfinite(hist.back().val_loss));  // validation ran every epoch...
  EXPECT_EQ(stepped_on, std::set<std::int64_t>(h.train.begin(), h.train.end()));  // ...on samples never stepped on
  for (auto v : h.validation) EXPECT_EQ(stepped_on.count(v), 0u) << "validation sample " << v;
}
