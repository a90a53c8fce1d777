// `magmadnn train --config` of hybrid plans under mpirun (label mpi): a run
// on 2 ranks writes its plan and the split weight memory to summary.json and
// the one-process checkpoint, which resumes on another rank count (3, and
// one process); a strategy other than allreduce is refused; on Fashion-MNIST (label slow),
// LeNet-5 under "auto" reaches the single process's test accuracy.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "magmadnn/io/checkpoint.h"
#include "support/run_fixtures.h"

namespace fs = std::filesystem;
using namespace magmadnn;

namespace {

class HybridTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "/magmadnn_hybrid_train_" + std::to_string(::getpid());
    fs::remove_all(root_);
    fs::create_directories(root_ + "/data");
    test::write_stripes(root_ + "/data", "train", 300, 3, {120, 30, true});
    test::write_stripes(root_ + "/data", "t10k", 90, 4, {120, 30, true});
  }
  void TearDown() override { fs::remove_all(root_); }

  // `magmadnn ARGS` on `ranks` ranks (0: one plain process). Open MPI refuses
  // root (build containers) without both variables.
  test::CommandResult app(int ranks, const std::string& args) const {
    std::string launch;
    if (ranks > 0) {
      launch = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + std::string(MAGMADNN_MPIEXEC) + " -np " +
               std::to_string(ranks) + " --oversubscribe ";
    }
    return test::run_shell("cd " + root_ + " && OMP_NUM_THREADS=1 " + launch + MAGMADNN_APP + " " + args,
                           root_ + "/cmd");
  }
  // A config file of `json`, returned as "--config FILE".
  std::string config(const std::string& name, const nlohmann::json& json) const {
    const std::string file = root_ + "/" + name + ".json";
    std::ofstream(file) << json.dump();
    return "--config " + file;
  }
  nlohmann::json mlp(const std::string& parallel) const {
    return {{"name", "hybrid-mlp"},
            {"layers",
             {{{"type", "flatten"}},
              {{"type", "dense"}, {"units", 32}, {"activation", "relu"}},
              {{"type", "dense"}, {"units", 32}, {"activation", "relu"}},
              {{"type", "dense"}, {"units", 3}, {"activation", "softmax"}}}},
            {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.1}}},
            {"data", {{"dataset", "idx"}, {"dir", root_ + "/data"}}},
            {"epochs", 2},
            {"batch_size", 15},
            {"distributed", {{"parallel", parallel}}}};
  }
  nlohmann::json summary(const std::string& run) const {
    return nlohmann::json::parse(test::read_text(root_ + "/" + run + "/summary.json"));
  }
  std::string root_;
};

TEST_F(HybridTrain, TwoRanksWriteThePlanAndTheSplitMemory) {
  const auto r = app(2, "train " + config("auto", mlp("auto")) + " --out " + root_ + "/run --quiet");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  const auto s = summary("run");
  EXPECT_EQ(s["ranks"], 2);
  EXPECT_EQ(s["checkpoint"], "checkpoint.bin");
  EXPECT_EQ(s["parallel_plan"]["layers"][1]["placement"], "column");
  EXPECT_EQ(s["parallel_plan"]["layers"][2]["placement"], "row");
  EXPECT_EQ(s["parallel_plan"]["layers"][3]["placement"], "replicated");
  const auto& m = s["memory"];
  // W 32 x 64 and 32 x 32, b 32 and 32: 16 rows, 16 columns and 16 + 32 of the biases per rank.
  EXPECT_EQ(m["model_parallel_weight_bytes_whole"], 4 * (32 * 64 + 32 + 32 * 32 + 32));
  EXPECT_EQ(m["model_parallel_weight_bytes_per_rank"], 4 * (16 * 64 + 16 + 32 * 16 + 32));
  EXPECT_TRUE(fs::exists(root_ + "/run/checkpoint.bin"));

  // The same run on one process: the same test score (the same weights up to rounding).
  const auto one = app(0, "train " + config("auto", mlp("auto")) + " --out " + root_ + "/one --quiet");
  ASSERT_EQ(one.rc, 0) << one.out << one.err;
  EXPECT_NEAR(s["test_loss"].get<double>(), summary("one")["test_loss"].get<double>(), 1e-4);
  EXPECT_EQ(s["test_accuracy"], summary("one")["test_accuracy"]);
}

// A 2-rank run of one epoch (with --checkpoint-every 4, accepted now:
// mid-epoch checkpoints, the epoch-end one last) resumed for a second epoch
// on 3 ranks and on one process ends where the uninterrupted 2-rank run
// ends, to rounding (the split layers sum in another order): test loss
// within 1e-4, the same accuracy. Mid-epoch resumes are test_hybrid's
// HybridCheckpoint tests.
TEST_F(HybridTrain, CheckpointResumesOnAnotherRankCount) {
  const std::string cfg = config("model", mlp("model"));
  const auto whole = app(2, "train " + cfg + " --out " + root_ + "/whole --quiet");
  ASSERT_EQ(whole.rc, 0) << whole.out << whole.err;
  for (const int ranks : {3, 0}) {
    const std::string run = root_ + "/r" + std::to_string(ranks);
    const auto first = app(2, "train " + cfg + " --out " + run + " --epochs 1 --checkpoint-every 4 --quiet");
    ASSERT_EQ(first.rc, 0) << first.out << first.err;
    const auto rest = app(ranks, "train --out " + run + " --resume --epochs 2 --quiet");
    ASSERT_EQ(rest.rc, 0) << rest.out << rest.err;
    const auto s = summary("r" + std::to_string(ranks));
    EXPECT_EQ(s["epochs"], 2);
    EXPECT_NEAR(s["test_loss"].get<double>(), summary("whole")["test_loss"].get<double>(), 1e-4) << ranks << " ranks";
    EXPECT_EQ(s["test_accuracy"], summary("whole")["test_accuracy"]) << ranks << " ranks";
  }
}

// --deterministic: the convolution and pooling algorithms are picked by a
// fixed rule instead of by timing, so three launches of a hybrid network
// with a convolution (data-parallel on batch shards, gathered before the
// split dense pair) end with the same bits: test loss and final training
// loss equal as doubles, and the checkpoints' tensors byte for byte.
TEST_F(HybridTrain, DeterministicRerunsAreBitIdentical) {
  nlohmann::json j = mlp("auto");
  j["layers"] = {{{"type", "conv2d"}, {"filters", 4}, {"kernel", 3}, {"padding", 1}, {"activation", "relu"}},
                 {{"type", "pool"}, {"mode", "max"}, {"kernel", 2}, {"stride", 2}},
                 {{"type", "flatten"}},
                 {{"type", "dense"}, {"units", 32}, {"activation", "relu"}},
                 {{"type", "dense"}, {"units", 32}, {"activation", "relu"}},
                 {{"type", "dense"}, {"units", 3}, {"activation", "softmax"}}};
  const std::string cfg = config("conv", j);
  std::vector<nlohmann::json> runs;
  for (int k = 0; k < 3; ++k) {
    const std::string run = "det" + std::to_string(k);
    const auto r = app(2, "train " + cfg + " --deterministic --out " + root_ + "/" + run + " --quiet");
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
    runs.push_back(summary(run));
  }
  EXPECT_EQ(runs[0]["parallel_plan"]["layers"][0]["placement"], "data");
  for (int k = 1; k < 3; ++k) {
    EXPECT_EQ(runs[k]["test_loss"].get<double>(), runs[0]["test_loss"].get<double>()) << "run " << k;
    EXPECT_EQ(runs[k]["final_train_loss"].get<double>(), runs[0]["final_train_loss"].get<double>()) << "run " << k;
    // The tensors (weights, optimizer state) byte for byte; the header also
    // holds each epoch's seconds, which differ.
    const io::Checkpoint a = io::read_checkpoint(root_ + "/det0/checkpoint.bin");
    const io::Checkpoint b = io::read_checkpoint(root_ + "/det" + std::to_string(k) + "/checkpoint.bin");
    ASSERT_EQ(a.tensors().size(), b.tensors().size());
    for (std::size_t t = 0; t < a.tensors().size(); ++t) {
      EXPECT_EQ(a.tensors()[t].name, b.tensors()[t].name);
      EXPECT_TRUE(a.tensors()[t].data == b.tensors()[t].data) << a.tensors()[t].name << ", run " << k;
    }
  }
}

TEST_F(HybridTrain, RefusesAStrategyOtherThanAllreduce) {
  auto ps = mlp("model");
  ps["distributed"]["strategy"] = "ps";
  const auto bad = app(2, "train " + config("ps", ps) + " --out " + root_ + "/b");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE((bad.out + bad.err).find("distributed.strategy: the plan has model-parallel layers"), std::string::npos)
      << bad.out << bad.err;
}

// Fashion-MNIST (label slow): LeNet-5 under "auto" on 2 and 4 ranks against
// one process, 2 epochs of the 54,000 training images (1,688 steps of 64),
// scored on the 10,000 test images. The ranks agree with one process to
// rounding step for step (test_hybrid), which SGD with momentum amplifies
// over the run: the scores agree within that noise, as plain data
// parallelism's do (measured in docs/notes/hybrid-plans.md, "Tests"). The
// bound is the data-parallel issue's, 2 points: with 1.5 the test failed
// once at 1.59 while another build shared the two cores. Convolutions are
// picked by rule ("deterministic"), so the machine's load cannot change
// the algorithms and their rounding between the three runs.
TEST(HybridTrainFashionMnist, LeNet5AutoScoresAsOneProcess) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(dir + "/train-images-idx3-ubyte.gz") && !fs::exists(dir + "/train-images-idx3-ubyte")) {
    GTEST_SKIP() << "Fashion-MNIST is not in " << dir;
  }
  const std::string root = ::testing::TempDir() + "/magmadnn_hybrid_fmnist_" + std::to_string(::getpid());
  fs::create_directories(root);
  nlohmann::json j = {
      {"name", "lenet5-auto"},
      {"layers",
       {{{"type", "conv2d"}, {"filters", 6}, {"kernel", {5, 5}}, {"padding", {2, 2}}, {"activation", "relu"}},
        {{"type", "pool"}, {"mode", "max"}, {"kernel", {2, 2}}, {"stride", {2, 2}}},
        {{"type", "conv2d"}, {"filters", 16}, {"kernel", {5, 5}}, {"activation", "relu"}},
        {{"type", "pool"}, {"mode", "max"}, {"kernel", {2, 2}}, {"stride", {2, 2}}},
        {{"type", "flatten"}},
        {{"type", "dense"}, {"units", 120}, {"activation", "relu"}},
        {{"type", "dense"}, {"units", 84}, {"activation", "relu"}},
        {{"type", "dense"}, {"units", 10}, {"activation", "softmax"}}}},
      {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.05}, {"momentum", 0.9}}},
      {"data", {{"dataset", "fashion-mnist"}, {"dir", dir}}},
      {"epochs", 2},
      {"batch_size", 64},
      {"deterministic", true},
      {"distributed", {{"parallel", "auto"}}}};
  std::ofstream(root + "/lenet.json") << j.dump();
  double accuracy[5] = {};
  for (int ranks : {0, 2, 4}) {
    const std::string launch =
        ranks == 0 ? std::string()
                   : "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + std::string(MAGMADNN_MPIEXEC) +
                         " -np " + std::to_string(ranks) + " --oversubscribe ";
    const std::string out = root + "/np" + std::to_string(ranks);
    const auto r = test::run_shell("OMP_NUM_THREADS=1 " + launch + MAGMADNN_APP + " train --config " + root +
                                       "/lenet.json --out " + out + " --quiet",
                                   root + "/cmd");
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
    accuracy[ranks] = nlohmann::json::parse(test::read_text(out + "/summary.json"))["test_accuracy"].get<double>();
  }
  fs::remove_all(root);
  std::printf("LeNet-5 auto on Fashion-MNIST: test accuracy %.4f on one process, %.4f on 2 ranks, %.4f on 4\n",
              accuracy[0], accuracy[2], accuracy[4]);
  EXPECT_GT(accuracy[0], 0.85);
  EXPECT_NEAR(accuracy[2], accuracy[0], 0.02);
  EXPECT_NEAR(accuracy[4], accuracy[0], 0.02);
}

}  // namespace
