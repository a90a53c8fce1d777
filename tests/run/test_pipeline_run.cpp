// A config with "parallel": {"pipeline": ...} trained as a pipeline
// (run/pipeline_run.cpp): stages as threads of one process
// (ThreadCommunicator) against the same config trained by one process,
// epoch for epoch; the plan in summary.json; the refusals at the run's start.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include <unistd.h>

#include "support/run_fixtures.h"
#include "support/thread_ranks.h"
#include "magmadnn/comm/thread_communicator.h"
#include "magmadnn/run/run_training.h"

using namespace magmadnn;
using namespace magmadnn::run;
namespace fs = std::filesystem;

namespace {

class PipelineRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/magmadnn_pipeline_run_" + std::to_string(::getpid());
    fs::create_directories(dir_);
    test::write_stripes(dir_, "train", 200, 1, {149, 30, true});
    test::write_stripes(dir_, "t10k", 50, 2, {149, 30, true});
  }
  void TearDown() override { fs::remove_all(dir_); }

  // 8x8 images, 160 training rows (40 held out) in batches of 32.
  Json config() const {
    return {{"layers", Json::array({{{"type", "conv2d"}, {"filters", 4}, {"kernel", 3}, {"padding", 1},
                                     {"activation", "relu"}},
                                    {{"type", "pool"}, {"mode", "max"}, {"kernel", 2}, {"stride", 2}},
                                    {{"type", "flatten"}},
                                    {{"type", "dense"}, {"units", 16}, {"activation", "relu"}},
                                    {{"type", "dense"}, {"units", 3}, {"activation", "softmax"}}})},
            {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.1}, {"momentum", 0.9}}},
            {"epochs", 3},
            {"batch_size", 32},
            {"seed", 5},
            {"data", {{"dataset", "idx"}, {"dir", dir_}, {"val_split", 0.2}}}};
  }

  // The config with a pipeline, run on `stages` threads; rank r's result at r.
  static std::vector<RunResult> run_pipelined(const Json& j, int ranks) {
    const TrainSpec spec = parse_config(j);
    auto comms = distributed::make_thread_group(ranks);
    std::vector<std::unique_ptr<TrainingRun>> runs;
    for (int r = 0; r < ranks; ++r) runs.push_back(std::make_unique<TrainingRun>(spec));  // seeding is global
    std::vector<RunResult> out(static_cast<std::size_t>(ranks));
    test::on_thread_ranks(ranks, [&](int r) {
      RunOptions o;
      o.communicator = comms[static_cast<std::size_t>(r)];
      out[r] = runs[r]->run(o);
    });
    return out;
  }

  std::string dir_;
};

Json with_pipeline(Json j, Json pipeline) {
  j["parallel"] = {{"pipeline", std::move(pipeline)}};
  return j;
}

TEST_F(PipelineRun, EqualsOneProcessEpochForEpoch) {
  const RunResult one = TrainingRun(parse_config(config())).run();
  EXPECT_LT(one.history.front().train_accuracy, 0.95) << "the data must leave something to learn";
  for (const Json& p : {Json{{"stages", 2}, {"micro_batches", 4}, {"schedule", "gpipe"}},
                        Json{{"stages", 3}, {"micro_batches", 8}, {"schedule", "1f1b"}, {"balance", "flops"}}}) {
    SCOPED_TRACE(p.dump());
    const int stages = p["stages"].get<int>();
    const std::vector<RunResult> rs = run_pipelined(with_pipeline(config(), p), stages);
    for (int r = 0; r < stages; ++r) {
      const RunResult& o = rs[r];
      ASSERT_EQ(o.history.size(), 3u);
      for (std::size_t e = 0; e < 3; ++e) {
        EXPECT_NEAR(o.history[e].train_loss, one.history[e].train_loss, 1e-5) << "epoch " << e + 1;
        EXPECT_NEAR(o.history[e].train_accuracy, one.history[e].train_accuracy, 1e-12) << "epoch " << e + 1;
        EXPECT_NEAR(o.history[e].val_loss, one.history[e].val_loss, 1e-5) << "epoch " << e + 1;
        EXPECT_NEAR(o.history[e].val_accuracy, one.history[e].val_accuracy, 1e-12) << "epoch " << e + 1;
      }
      EXPECT_NEAR(o.test.loss, one.test.loss, 1e-5);
      EXPECT_NEAR(o.test.accuracy, one.test.accuracy, 1e-12);
      EXPECT_EQ(o.test_predictions.size(), 50u);
      const Json& plan = o.summary["pipeline"];
      EXPECT_EQ(plan["stages"], stages);
      EXPECT_EQ(plan["cut_by"], p.value("balance", "parameters"));
      ASSERT_EQ(plan["per_stage"].size(), static_cast<std::size_t>(stages));
      EXPECT_EQ(plan["per_stage"][0]["layers"][0], 0);
      EXPECT_EQ(plan["per_stage"][stages - 1]["layers"][1], 4);
      EXPECT_EQ(o.summary["ranks"], stages);
      EXPECT_TRUE(o.summary["checkpoint"].is_null());
    }
  }
}

TEST_F(PipelineRun, RefusedAtTheStartWithTheReason) {
  const auto error = [](const Json& j, int ranks) -> std::string {
    try {
      run_pipelined(j, ranks);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error(with_pipeline(config(), {{"stages", 2}}), 1),
            "parallel.pipeline.stages: 2 stages need 2 ranks (one per stage), the run has 1 (start it with mpirun -np "
            "2)");
  EXPECT_EQ(error(with_pipeline(config(), {{"stages", 2}}), 3),
            "parallel.pipeline.stages: 2 stages need 2 ranks (one per stage), the run has 3 (start it with mpirun -np "
            "2)");
  Json odd = with_pipeline(config(), {{"stages", 2}, {"micro_batches", 3}});
  odd["batch_size"] = 48;  // 160 rows: 3 batches of 48 and one of 16
  EXPECT_EQ(error(odd, 2), "parallel.pipeline.micro_batches: 3 micro-batches do not divide the last training batch "
                           "of 16 samples (160 samples in batches of 48); change data.limit_train or data.val_split");
}

}  // namespace
