// precision in a training run: parsed and written by the config, refused
// where the machine cannot run it, trained at bf16, and a checkpoint (float
// masters) resumed at another precision.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <unistd.h>

#include "magmadnn/backend/registry.h"
#include "magmadnn/run/run_training.h"
#include "support/run_fixtures.h"

using namespace magmadnn;
using namespace magmadnn::run;
namespace fs = std::filesystem;

namespace {

class PrecisionRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/magmadnn_precision_" + std::to_string(::getpid());
    fs::create_directories(dir_);
    test::write_stripes(dir_, "train", 200, 1, {60, 220, false});
    test::write_stripes(dir_, "t10k", 50, 2, {60, 220, false});
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Wide enough layers (and a conv) that the bf16 GEMMs and convolutions run.
  Json config(const std::string& precision, int epochs) const {
    return {{"name", "tiny"},
            {"layers", Json::array({{{"type", "conv2d"}, {"filters", 4}, {"kernel", 3}, {"padding", 1},
                                     {"activation", "relu"}},
                                    {{"type", "flatten"}},
                                    {{"type", "dense"}, {"units", 64}, {"activation", "relu"}},
                                    {{"type", "dense"}, {"units", 3}, {"activation", "softmax"}}})},
            {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.1}, {"momentum", 0.9}}},
            {"epochs", epochs},
            {"batch_size", 20},
            {"precision", precision},
            {"data", {{"dataset", "idx"}, {"dir", dir_}, {"val_split", 0.2}}}};
  }
  std::string dir_;
};

TEST_F(PrecisionRun, ConfigParsesWritesAndChecksPrecision) {
  EXPECT_EQ(parse_config(config("bf16", 1)).precision, Precision::BF16);
  EXPECT_EQ(to_json(parse_config(config("bf16", 1)))["precision"], "bf16");
  EXPECT_FALSE(to_json(parse_config(config("fp32", 1))).contains("precision")) << "fp32 is the default";
  EXPECT_EQ(parse_config(to_json(parse_config(config("tf32", 1)))).precision, Precision::TF32);
  try {
    parse_config(config("fp8", 1));
    FAIL() << "fp8 accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "precision");
    EXPECT_NE(std::string(e.what()).find("\"fp32\""), std::string::npos) << e.what();
  }
}

TEST_F(PrecisionRun, Fp16AndTf32AreRefusedOnTheCpuWithTheReason) {
  if (has_cuda_device()) GTEST_SKIP() << "a GPU is present: fp16 and tf32 are allowed";
  for (const char* p : {"fp16", "tf32"}) {
    try {
      TrainingRun run(parse_config(config(p, 1)));
      FAIL() << p << " accepted on the CPU";
    } catch (const NotSupportedError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("precision ") + p + " needs a GPU"), std::string::npos) << what;
    }
  }
}

TEST_F(PrecisionRun, Bf16TrainsAndSaysSo) {
  const RunResult r = run_training(parse_config(config("bf16", 3)));
  EXPECT_GE(r.test.accuracy, 0.9);  // separable classes
  EXPECT_EQ(r.summary["precision"], "bf16");
}

// The checkpoint holds the float masters, so a run may continue at another
// precision: the resumed run restores the first epochs' history from it and
// trains on to the same quality.
TEST_F(PrecisionRun, CheckpointResumesAtTheOtherPrecision) {
  for (const auto& [first, then] : {std::pair{"bf16", "fp32"}, std::pair{"fp32", "bf16"}}) {
    SCOPED_TRACE(std::string(first) + " then " + then);
    RunOptions o;
    o.checkpoint_path = dir_ + "/" + first + ".ckpt";
    const RunResult a = run_training(parse_config(config(first, 2)), o);
    o.resume = true;
    const RunResult b = run_training(parse_config(config(then, 4)), o);
    ASSERT_EQ(b.history.size(), 4u);
    for (std::size_t e = 0; e < 2; ++e) EXPECT_EQ(b.history[e].train_loss, a.history[e].train_loss);
    EXPECT_EQ(b.summary["precision"], then);
    EXPECT_GE(b.test.accuracy, 0.9);
  }
}

}  // namespace
