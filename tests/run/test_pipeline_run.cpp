// A config with "parallel": {"pipeline": ...} trained as a pipeline
// (run/pipeline_run.cpp): stages as threads of one process
// (ThreadCommunicator) against the same config trained by one process,
// epoch for epoch; the plan in summary.json; the refusals at the run's start.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

std::vector<float> weights(model::NeuralNetwork<float>& net);

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
            {"schedule", {{"type", "cosine"}, {"min_lr", 0.01}}},
            {"epochs", 3},
            {"batch_size", 32},
            {"seed", 5},
            {"deterministic", true},  // convolutions by a fixed rule, not by timing
            {"data", {{"dataset", "idx"}, {"dir", dir_}, {"val_split", 0.2}}}};
  }

  // The config with a pipeline, run on `stages` threads; rank r's result at
  // r, and rank 0's network (every rank's holds the whole trained one).
  static std::vector<RunResult> run_pipelined(const Json& j, int ranks, const std::string& checkpoint = "",
                                              bool resume = false, std::vector<float>* weights_out = nullptr) {
    const TrainSpec spec = parse_config(j);
    auto comms = distributed::make_thread_group(ranks);
    std::vector<std::unique_ptr<TrainingRun>> runs;
    for (int r = 0; r < ranks; ++r) runs.push_back(std::make_unique<TrainingRun>(spec));  // seeding is global
    std::vector<RunResult> out(static_cast<std::size_t>(ranks));
    test::on_thread_ranks(ranks, [&](int r) {
      RunOptions o;
      o.communicator = comms[static_cast<std::size_t>(r)];
      o.checkpoint_path = checkpoint;
      o.resume = resume;
      out[r] = runs[r]->run(o);
    });
    if (weights_out) *weights_out = weights(runs[0]->network());
    return out;
  }

  std::string dir_;
};

std::vector<float> weights(model::NeuralNetwork<float>& net) {
  std::vector<float> w;
  for (const auto& p : net.parameters()) {
    const auto v = p->value().to_vector();
    w.insert(w.end(), v.begin(), v.end());
  }
  return w;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, double(std::abs(a[i] - b[i])));
  return d;
}

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
        EXPECT_EQ(o.history[e].learning_rate, one.history[e].learning_rate) << "epoch " << e + 1;
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
  EXPECT_EQ(error(with_pipeline(config(), {{"stages", 2}, {"replicas", 2}}), 1),
            "parallel.pipeline.replicas: 2 stages x 2 replicas need 4 ranks, the run has 1 (start it with mpirun -np 4)");
  Json odd = with_pipeline(config(), {{"stages", 2}, {"micro_batches", 3}});
  odd["batch_size"] = 48;  // 160 rows: 3 batches of 48 and one of 16
  EXPECT_EQ(error(odd, 2), "parallel.pipeline.micro_batches: 3 micro-batches (all replicas') do not divide the last "
                           "training batch of 16 samples (160 samples in batches of 48); change data.limit_train or "
                           "data.val_split");
}

// A pipelined run's checkpoint is the one-process network's (every rank's
// network() holds the whole trained network at each epoch's end), and runs
// resume across plans: one process -> pipeline and pipeline -> one process.
TEST_F(PipelineRun, CheckpointsAreOneProcessCheckpointsAndResumeOnAnyPlan) {
  const std::string one_ck = dir_ + "/one.bin", pipe_ck = dir_ + "/pipe.bin";
  Json three = config(), two = config();
  three.erase("schedule");  // constant: a cosine over 2 epochs is not the first 2 of one over 3
  two.erase("schedule");
  two["epochs"] = 2;
  TrainingRun alone(parse_config(three));
  RunOptions o;
  o.checkpoint_path = one_ck;
  const RunResult one = alone.run(o);
  const std::vector<float> w_one = weights(alone.network());
  const Json p = {{"stages", 2}, {"micro_batches", 4}};
  std::vector<float> w_pipe;
  run_pipelined(with_pipeline(three, p), 2, pipe_ck, false, &w_pipe);
  EXPECT_LT(max_diff(w_pipe, w_one), 2e-5) << "every rank's network holds the trained weights";
  TrainingRun loaded(parse_config(three));
  loaded.network().load(pipe_ck);
  EXPECT_EQ(loaded.network().history().size(), 3u);
  EXPECT_EQ(loaded.network().cursor().epoch, 3u);
  EXPECT_LT(max_diff(weights(loaded.network()), w_one), 2e-5);

  // One process for 2 epochs, the pipeline for the third.
  const std::string half = dir_ + "/half.bin";
  TrainingRun first_two(parse_config(two));
  RunOptions o2;
  o2.checkpoint_path = half;
  first_two.run(o2);
  std::vector<float> w_resumed;
  const auto rs = run_pipelined(with_pipeline(three, p), 2, half, true, &w_resumed);
  EXPECT_LT(max_diff(w_resumed, w_one), 2e-5) << "one process -> pipeline";
  ASSERT_EQ(rs[0].history.size(), 3u);
  EXPECT_NEAR(rs[0].history[2].train_loss, one.history[2].train_loss, 1e-5);
  EXPECT_NEAR(rs[1].test.loss, one.test.loss, 1e-5);

  // The pipeline for 2 epochs, one process for the third.
  const std::string half_pipe = dir_ + "/half_pipe.bin";
  run_pipelined(with_pipeline(two, p), 2, half_pipe);
  TrainingRun last(parse_config(three));
  RunOptions o3;
  o3.checkpoint_path = half_pipe;
  o3.resume = true;
  const RunResult back = last.run(o3);
  EXPECT_LT(max_diff(weights(last.network()), w_one), 2e-5) << "pipeline -> one process (momentum state included)";
  EXPECT_NEAR(back.history[2].train_loss, one.history[2].train_loss, 1e-5);
}

// A checkpoint written inside an epoch does not resume as a pipeline.
TEST_F(PipelineRun, AMidEpochCheckpointIsRefusedNamingTheEpoch) {
  const std::string ck = dir_ + "/mid.bin";
  TrainingRun alone(parse_config(config()));
  RunOptions o;
  o.checkpoint_path = ck;
  o.checkpoint_every_steps = 2;
  auto stop = std::make_shared<model::LambdaCallback<float>>();
  int steps = 0;
  stop->batch_end = [&](model::NeuralNetwork<float>& m, const model::BatchLogs&) {
    if (++steps == 3) m.stop_training();
  };
  o.callbacks.push_back(stop);
  alone.run(o);
  TrainingRun probe(parse_config(config()));
  probe.network().load(ck);
  ASSERT_EQ(probe.network().cursor().epoch, 0u);
  ASSERT_GT(probe.network().cursor().batch, 0);
  std::string e;
  try {
    run_pipelined(with_pipeline(config(), {{"stages", 2}}), 2, ck, true);
  } catch (const ValueError& err) {
    e = err.what();
  }
  EXPECT_THAT(e, ::testing::HasSubstr("stands inside epoch 1: a pipeline resumes only from an epoch's end"));
}

}  // namespace
