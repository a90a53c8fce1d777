// run_training: a whole training run as one library call, on a small
// synthetic MNIST-format data set.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <sstream>

#include <unistd.h>

#include "support/run_fixtures.h"
#include "magmadnn/io/idx.h"
#include "magmadnn/run/run_training.h"

using namespace magmadnn;
using namespace magmadnn::run;
namespace fs = std::filesystem;

namespace {

// Class c lights up rows [2c+1, 2c+3) of an 8x8 image; the rest is noise.
void write_split(const std::string& dir, const std::string& prefix, int n, unsigned seed) {
  test::write_stripes(dir, prefix, n, seed, {60, 220, false});
}

class RunTraining : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/magmadnn_run_" + std::to_string(::getpid());
    fs::create_directories(dir_);
    write_split(dir_, "train", 200, 1);
    write_split(dir_, "t10k", 50, 2);
  }
  void TearDown() override { fs::remove_all(dir_); }
  TrainSpec spec() const {
    return parse_config({{"name", "tiny"},
                         {"layers", Json::array({{{"type", "dense"}, {"units", 16}, {"activation", "relu"}},
                                                 {{"type", "dense"}, {"units", 3}, {"activation", "softmax"}}})},
                         {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.1}, {"momentum", 0.9}}},
                         {"epochs", 3},
                         {"batch_size", 20},
                         {"data", {{"dataset", "idx"}, {"dir", dir_}, {"val_split", 0.2}}}});
  }
  std::string dir_;
};

}  // namespace

TEST_F(RunTraining, ReturnsTheHistoryTheTestScoreAndTheSummary) {
  const RunResult r = run_training(spec());
  ASSERT_EQ(r.history.size(), 3u);
  EXPECT_TRUE(std::isfinite(r.history.back().val_accuracy));
  EXPECT_GE(r.test.accuracy, 0.9);  // separable classes
  EXPECT_EQ(r.test.samples, 50);
  EXPECT_EQ(r.summary["train_samples"], 160);
  EXPECT_EQ(r.summary["validation_samples"], 40);
  EXPECT_EQ(r.summary["test_accuracy"].get<double>(), r.test.accuracy);
  EXPECT_GT(r.summary["memory"]["peak_rss_bytes"].get<std::uint64_t>(), 0u);
}

TEST_F(RunTraining, SameSpecSameRunAndCallbacksSeeEveryEpoch) {
  const RunResult a = run_training(spec());
  TrainingRun tr(spec());
  EXPECT_EQ(tr.validation().x.shape()[0], 40);
  EXPECT_EQ(tr.sample_shape(), (std::vector<std::int64_t>{1, 8, 8}));
  int epochs_seen = 0;
  auto cb = std::make_shared<model::LambdaCallback<float>>();
  cb->epoch_end = [&](model::NeuralNetwork<float>&, const model::EpochRecord&) { ++epochs_seen; };
  RunOptions o;
  o.callbacks.push_back(cb);
  const RunResult b = tr.run(o);
  EXPECT_EQ(epochs_seen, 3);
  for (std::size_t e = 0; e < 3; ++e) EXPECT_EQ(a.history[e].train_loss, b.history[e].train_loss) << e;
  EXPECT_EQ(a.test.loss, b.test.loss);
}

// A spec made in code meets parse_config's limits too: nothing is narrowed
// (4294967296 epochs would have become 0).
TEST_F(RunTraining, ASpecOutsideTheLimitsIsRefusedBeforeLoading) {
  TrainSpec s = spec();
  s.epochs = 4294967296LL;
  try {
    TrainingRun run(s);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("TrainingRun: epochs 4294967296 is outside [1, 1000000]"), std::string::npos)
        << e.what();
  }
}

TEST_F(RunTraining, MissingDataNamesTheFolder) {
  TrainSpec s = spec();
  s.data.dir = dir_ + "/nowhere";
  try {
    run_training(s);
    FAIL() << "no error";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("nowhere"), std::string::npos) << e.what();
  }
}

// A residual network (residual blocks with batch normalisation, global
// average pooling) from the config: it learns the stripes, and a run resumed
// from its checkpoint (weights, every block's running statistics, optimizer
// state) ends exactly where an uninterrupted run does.
TEST_F(RunTraining, AResidualNetworkLearnsAndResumesExactly) {
  const auto residual_spec = [&](std::int64_t epochs) {
    return parse_config({{"name", "tiny_resnet"},
                         {"layers", Json::array({{{"type", "conv2d"}, {"filters", 4}, {"kernel", {3, 3}},
                                                  {"padding", {1, 1}}, {"bias", false}},
                                                 {{"type", "batchnorm"}},
                                                 {{"type", "activation"}, {"function", "relu"}},
                                                 {{"type", "residual"}, {"filters", 4}},
                                                 {{"type", "residual"}, {"filters", 8}, {"stride", {2, 2}}},
                                                 {{"type", "global_pool"}},
                                                 {{"type", "flatten"}},
                                                 {{"type", "dense"}, {"units", 3}, {"activation", "softmax"}}})},
                         {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.05}, {"momentum", 0.9}}},
                         {"epochs", epochs},
                         {"batch_size", 20},
                         // Bit-equal reruns need convolutions picked by rule,
                         // not by timing (on a GPU the timed pick can differ).
                         {"deterministic", true},
                         {"data", {{"dataset", "idx"}, {"dir", dir_}, {"val_split", 0.2}}}});
  };
  const RunResult whole = run_training(residual_spec(4));
  EXPECT_GE(whole.test.accuracy, 0.9);  // separable classes
  RunOptions o;
  o.checkpoint_path = dir_ + "/resnet.ckpt";
  TrainingRun(residual_spec(2)).run(o);
  o.resume = true;
  const RunResult resumed = TrainingRun(residual_spec(4)).run(o);
  ASSERT_EQ(resumed.history.size(), 4u);
  EXPECT_EQ(resumed.history.back().train_loss, whole.history.back().train_loss);
  EXPECT_EQ(resumed.test.loss, whole.test.loss);
}

// The images are held as the file's uint8; the memory report says so, and
// the data set counts a byte a pixel (floats for the one-hot labels).
TEST_F(RunTraining, TheDataSetIsHeldAsUint8AndTheMemoryReportShowsIt) {
  const RunResult r = run_training(spec());
  const Json& m = r.summary["memory"];
  EXPECT_EQ(m["dataset_image_type"], "uint8");
  const std::uint64_t pixels = 250u * 64u, labels = 250u * 3u * sizeof(float);
  EXPECT_EQ(m["dataset_bytes"].get<std::uint64_t>(), pixels + labels);
  EXPECT_EQ(m["dataset_bytes_as_float"].get<std::uint64_t>(), 4 * pixels + labels);
  TrainingRun tr(spec());
  EXPECT_TRUE(tr.train().x.is_bytes());
  EXPECT_TRUE(tr.validation().x.is_bytes());
  EXPECT_TRUE(tr.test().x.is_bytes());
  EXPECT_EQ(tr.dataset_bytes(), pixels + labels);
}

// loss_scaling "on" at fp32: the scaler runs (no overflow here, so no skip,
// and a power-of-two scale leaves training as it was); "auto" at fp32 has
// none, and the summary then has no loss_scaling record.
TEST_F(RunTraining, LossScalingOnAtFp32IsRecordedAndChangesNothing) {
  TrainSpec on = spec();
  on.loss_scaling.mode = "on";
  on.loss_scaling.init_scale = 1024;
  on.loss_scaling.growth_interval = 4;
  EXPECT_TRUE(loss_scaling_enabled(on.loss_scaling, on.precision));
  EXPECT_FALSE(loss_scaling_enabled(spec().loss_scaling, Precision::FP32));
  EXPECT_TRUE(loss_scaling_enabled(spec().loss_scaling, Precision::FP16));
  std::ostringstream log;
  RunOptions o;
  o.log = &log;
  const RunResult a = TrainingRun(on).run(o);
  const RunResult b = run_training(spec());
  const Json& l = a.summary["loss_scaling"];
  EXPECT_EQ(l["skipped_steps"], 0);
  EXPECT_TRUE(l["skipped"].empty());
  EXPECT_EQ(l["final_scale"].get<double>(), 1024.0 * 64);  // 24 good steps: doubled 6 times
  EXPECT_TRUE(log.str().empty());
  EXPECT_FALSE(b.summary.contains("loss_scaling"));
  for (std::size_t e = 0; e < 3; ++e) EXPECT_EQ(a.history[e].train_loss, b.history[e].train_loss) << e;
}
