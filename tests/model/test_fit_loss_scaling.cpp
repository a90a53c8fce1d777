// Dynamic loss scaling wired into fit (FitOptions::loss_scaler), on the CPU
// at fp32: an inf injected into a gradient stands in for an fp16 overflow.
// A skipped step leaves the weights as they were, the scale halves at each
// skip and doubles back after growth_interval good steps, and a scale that
// never overflows changes nothing (a power of two scales exactly).
#include <cmath>
#include <limits>

#include "model_test_util.h"

using namespace magmadnn;
using namespace mtest;

namespace {

model::NeuralNetwork<float> blob_net(Tensor<float>& x, Tensor<float>& y, optimizer::optimizer_t opt) {
  set_seed(31);
  blobs<float>(96, 3, x, y, 2);
  model::nn_params_t p{16, 2, 0.1};  // 6 steps per epoch, 12 in all
  return model::NeuralNetwork<float>(mlp<float>(3, 8, 2), optimizer::CROSS_ENTROPY, opt, p);
}

std::shared_ptr<optimizer::LossScaler> scaler(double init, std::int64_t growth_interval) {
  optimizer::LossScaler::Options o;
  o.init_scale = init;
  o.growth_interval = growth_interval;
  return std::make_shared<optimizer::LossScaler>(o);
}

}  // namespace

TEST(FitLossScaling, OverflowingStepsAreSkippedTheScaleHalvesAndRecovers) {
  for (const auto opt : {optimizer::SGD, optimizer::ADAM}) {
    Tensor<float> x, y;
    model::NeuralNetwork<float> net = blob_net(x, y, opt);
    model::FitOptions<float> o;
    o.loss_scaler = scaler(1024.0, 3);
    std::vector<std::int64_t> logged;
    o.loss_scaler->set_on_skip([&](const optimizer::LossScaler::Skip& s) { logged.push_back(s.step); });

    // Steps 3 and 4 (1-based) overflow: an inf in the first weight's gradient.
    std::int64_t step = 0;
    std::vector<unsigned char> before;
    std::vector<double> scale_at_step;
    PluginProbe<float> probe;
    probe.finished = [&](const std::vector<Tensor<float>*>& g) {
      ++step;
      before = weight_bytes(net);  // the plugin runs before the update
      scale_at_step.push_back(o.loss_scaler->scale());
      if (step == 3 || step == 4) g[0]->set(0, std::numeric_limits<float>::infinity());
    };
    probe.attach(net);
    std::vector<bool> unchanged;
    auto cb = std::make_shared<model::LambdaCallback<float>>();
    cb->batch_end = [&](model::NeuralNetwork<float>& m, const model::BatchLogs&) {
      unchanged.push_back(weight_bytes(m) == before);
    };
    o.callbacks.push_back(cb);
    net.fit(x, y, o);

    ASSERT_EQ(step, 12);
    ASSERT_EQ(o.loss_scaler->skips().size(), 2u);
    EXPECT_EQ(o.loss_scaler->skips()[0].step, 3);
    EXPECT_EQ(o.loss_scaler->skips()[1].step, 4);
    EXPECT_EQ(logged, (std::vector<std::int64_t>{3, 4}));
    EXPECT_EQ(net.optimizer().step_count(), 10);  // the skipped steps did not count
    for (int s = 0; s < 12; ++s) EXPECT_EQ(unchanged[s], s == 2 || s == 3) << "step " << s + 1;
    // 1024 for steps 1-3; halved by the skips of 3 and 4; doubled after the
    // good steps 5-7 and 8-10; steps 11-12 are two more good ones.
    const std::vector<double> want = {1024, 1024, 1024, 512, 256, 256, 256, 512, 512, 512, 1024, 1024};
    EXPECT_EQ(scale_at_step, want);
    EXPECT_EQ(o.loss_scaler->scale(), 1024.0);
    EXPECT_EQ(o.loss_scaler->good_steps(), 2);
    for (const auto& p : net.parameters())
      for (float v : p->value().to_vector()) ASSERT_TRUE(std::isfinite(v));
  }
}

TEST(FitLossScaling, AScaleThatNeverOverflowsChangesNothing) {
  for (const auto opt : {optimizer::SGD, optimizer::ADAM}) {
    Tensor<float> x, y;
    model::NeuralNetwork<float> plain = blob_net(x, y, opt);
    model::NeuralNetwork<float> scaled = blob_net(x, y, opt);
    // The same unfused path for both: a plugin that keeps the gradients and does nothing.
    PluginProbe<float> noop;
    plain.set_training_plugin(&noop);
    scaled.set_training_plugin(&noop);
    model::FitOptions<float> o;
    o.loss_scaler = scaler(65536.0, 5);
    const auto hp = plain.fit(x, y);
    const auto hs = scaled.fit(x, y, o);
    EXPECT_TRUE(o.loss_scaler->skips().empty());
    EXPECT_EQ(o.loss_scaler->scale(), 65536.0 * 4);  // 12 good steps: two doublings
    EXPECT_EQ(weight_bytes(plain), weight_bytes(scaled));
    EXPECT_EQ(hp.back().train_loss, hs.back().train_loss);  // the loss is reported unscaled
  }
}
