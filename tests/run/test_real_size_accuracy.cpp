// Accuracy at real scale on the data we have (issue 41): the `resnet50` and
// `googlenet` presets, adapted to 28 x 28 grey Fashion-MNIST images and 10
// classes (their input layer's shape and their classifier's units, nothing
// else: the 224 x 224 stems then reach 1 x 1 by the last stage), learn to at
// least the test accuracy of the `resnet` preset (ResNet-8, made for these
// images) in the same number of epochs (the resnet preset's 2), each with
// its own optimizer settings, on the same subset of the training images.
// Labelled slow.
//
// The subset is reduced to keep each test under about 10 minutes on 2
// idle cores: 3,200 of the 60,000 training images and 1,000 of the 10,000
// test images. Measured on the 2-vCPU Zen 3, 2 threads, 2026-11-29, with
// the load average at 8-16 from other sessions' builds: the resnet50 test
// took 658 s (442 s of user CPU over both threads, so about 4 minutes on
// two idle cores): the resnet preset reached 0.697 (train loss 1.48, 0.93),
// resnet50 0.761 (1.64, 0.78); the googlenet test 973 s (466 s of user
// CPU): resnet 0.704 (the convolution chooser's picks, timed per run,
// round differently), googlenet 0.718 (1.49, 0.92), a narrow margin.
//
// Until the resnet50 preset started each bottleneck's last batch
// normalisation at a zero scale (its "gamma_init": 0), its loss on these
// images rose to 5-6 (ln 10 = 2.30) and its test accuracy stayed at
// 0.14-0.24; docs/notes/benchmarks-resnet.md ("ResNet-50 and GoogLeNet on
// 28 x 28 Fashion-MNIST") has the experiments that found the cause.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "magmadnn/run/presets.h"
#include "magmadnn/run/run_training.h"

using namespace magmadnn;
using namespace magmadnn::run;

namespace {

constexpr std::int64_t kTrain = 3200;  // training images, the same for every network
constexpr std::int64_t kTest = 1000;

// `name` on Fashion-MNIST: 1 x 28 x 28 input, 10 classes, `epochs`, `train`
// and `test` images.
Json on_fashion_mnist(const std::string& name, std::int64_t epochs, std::int64_t train = kTrain,
                      std::int64_t test = kTest) {
  Json j = preset(name);
  if (j["layers"][0]["type"] == "input") j["layers"][0]["shape"] = {1, 28, 28};
  for (auto it = j["layers"].rbegin(); it != j["layers"].rend(); ++it) {
    if ((*it)["type"] == "dense") {
      (*it)["units"] = 10;
      break;
    }
  }
  j["data"] = {{"dataset", "fashion-mnist"}, {"limit_train", train}, {"limit_test", test}, {"val_split", 0}};
  j["epochs"] = epochs;
  return j;
}

RunResult train(const Json& config) {
  TrainingRun tr(parse_config(config));
  const RunResult r = tr.run();
  std::printf("%s: test accuracy %.4f (loss %.4f), train loss by epoch", config["name"].get<std::string>().c_str(),
              r.test.accuracy, r.test.loss);
  for (const auto& e : r.history) std::printf(" %.4f", e.train_loss);
  std::printf(", %.1f s\n", r.fit_seconds);
  std::fflush(stdout);
  return r;
}

// `name` adapted to 28 x 28 reaches the resnet preset's test accuracy,
// trained on the same images for as many epochs.
void reaches_the_resnet_presets_accuracy(const std::string& name) {
  const std::int64_t epochs = preset("resnet")["epochs"].get<std::int64_t>();
  const RunResult small = train(on_fashion_mnist("resnet", epochs));
  EXPECT_GT(small.test.accuracy, 0.6);  // 0.697 measured: it learned
  const RunResult r = train(on_fashion_mnist(name, epochs));
  ASSERT_EQ(r.history.size(), static_cast<std::size_t>(epochs));
  EXPECT_LT(r.history.back().train_loss, r.history.front().train_loss) << name;
  EXPECT_GE(r.test.accuracy, small.test.accuracy) << name;
}

}  // namespace

TEST(RealSizeAccuracy, ResNet50ReachesTheResNetPresetsAccuracy) { reaches_the_resnet_presets_accuracy("resnet50"); }

TEST(RealSizeAccuracy, GoogLeNetReachesTheResNetPresetsAccuracy) { reaches_the_resnet_presets_accuracy("googlenet"); }

// The regression test of the zero-initialised scales (about 1 minute): the
// resnet50 preset adapted to 28 x 28, 2 epochs of 640 images at its own
// optimizer settings (lr 0.1 for a batch of 256 scaled to the preset's 32,
// warm-up, cosine) learns. Before (every scale 1): train loss 5.20 then
// 4.56, test accuracy 0.235 (test loss 85); PyTorch 1.13 from the same
// initial weights with the same rates: 5.50 then 2.77. After: 2.37-2.43
// then 1.29-1.50, test accuracy 0.575-0.59 (the resnet preset, at batch 32
// on the same images: 1.76, 1.16, 0.53).
TEST(RealSizeAccuracy, ResNet50LearnsFashionMnistAtItsOwnRate) {
  const RunResult r = train(on_fashion_mnist("resnet50", 2, 640, 200));
  ASSERT_EQ(r.history.size(), 2u);
  EXPECT_NEAR(r.history[1].learning_rate, 0.0, 0.0125);  // scaled, then annealed
  EXPECT_LT(r.history[1].train_loss, r.history[0].train_loss);
  EXPECT_LT(r.history[0].train_loss, 3.0);  // ln(10) = 2.30 is chance
  EXPECT_LT(r.history[1].train_loss, 2.0);
  EXPECT_GT(r.test.accuracy, 0.4);
  EXPECT_LT(r.test.loss, 3.0);
}
