// Time per epoch of the 784-528-10 sigmoid MLP on 60000 random samples,
// batch 100 (the benchmark issue 6 races against PyTorch). Label: slow.
#include <cstdio>
#include <cstdlib>

#include "magmadnn/layer/layers.h"
#include "model_test_util.h"

using namespace magmadnn;

TEST(ModelPerf, Mlp784x528x10EpochTime) {
  set_seed(1);
  const char* env = std::getenv("MAGMADNN_PERF_SAMPLES");  // smaller runs while profiling
  const std::int64_t n = env ? std::atoll(env) : 60000;
  Tensor<float> x({n, 784}, {UNIFORM, {0.0f, 1.0f}}, HOST);
  Tensor<float> y({n, 10}, {ZERO}, HOST);
  for (std::int64_t i = 0; i < n; ++i) y.set({i, i % 10}, 1.0f);
  layer::reset_layer_names();
  auto in = layer::input<float>({-1, 784}, HOST);
  auto fc1 = layer::fullyconnected(in->out(), 528);
  auto a1 = layer::activation(fc1->out(), layer::SIGMOID);
  auto fc2 = layer::fullyconnected(a1->out(), 10);
  auto a2 = layer::activation(fc2->out(), layer::SOFTMAX);
  auto out = layer::output(a2->out());
  model::NeuralNetwork<float> net({in.ptr(), fc1.ptr(), a1.ptr(), fc2.ptr(), a2.ptr(), out.ptr()},
                                  optimizer::CROSS_ENTROPY, optimizer::SGD, {100, 2, 0.05});
  const auto hist = net.fit(x, y);
  ASSERT_EQ(hist.size(), 2u);
  for (const auto& r : hist) {
    std::printf("[perf] 784-528-10 sigmoid MLP, %lld samples, batch 100: epoch %u: %.3f s (%.0f samples/s)\n",
                static_cast<long long>(n), r.epoch, r.seconds, r.samples_per_second);
    EXPECT_TRUE(std::isfinite(r.train_loss));
  }
}
