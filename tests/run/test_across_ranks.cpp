// Training across ranks without MPI: the distributed sampler's rule, and
// whole training runs on N ranks as N threads (comm/thread_communicator.h)
// against one process on the same global batch, including a checkpoint
// resumed on another rank count.
#include <gtest/gtest.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <unistd.h>

#include "support/run_fixtures.h"
#include "magmadnn/core/config.h"
#include "magmadnn/data/shard.h"
#include "magmadnn/io/checkpoint.h"
#include "magmadnn/io/idx.h"
#include "magmadnn/run/run_training.h"
#include "magmadnn/comm/thread_communicator.h"
#include "magmadnn/core/registry.h"
#include "magmadnn/parallel/strategy_registry.h"
#if MAGMADNN_HAVE_IMAGES
#include "data/image_files.h"
#endif

using namespace magmadnn;
using namespace magmadnn::run;
namespace fs = std::filesystem;

TEST(DistributedSampler, SlicesAreDisjointCoveringInRankOrderAndBalanced) {
  for (std::int64_t rows = 0; rows <= 40; ++rows) {
    for (int size = 1; size <= 7; ++size) {
      std::int64_t next = 0, lo = rows, hi = 0;
      for (int r = 0; r < size; ++r) {
        const data::RowRange s = data::shard_rows(rows, r, size);
        EXPECT_EQ(s.begin, next) << rows << " rows, rank " << r << " of " << size;  // disjoint, in order
        next = s.begin + s.count;
        lo = std::min(lo, s.count);
        hi = std::max(hi, s.count);
        EXPECT_EQ(s.count == 0, rows < size && r >= rows);
      }
      EXPECT_EQ(next, rows) << "the slices cover the batch";
      EXPECT_LE(hi - lo, 1) << rows << " rows on " << size << " ranks";
    }
  }
  EXPECT_EQ(data::shard_rows(100, 1, 3), (data::RowRange{34, 33}));
  EXPECT_THROW(data::shard_rows(10, 3, 3), ValueError);
  EXPECT_THROW(data::shard_rows(-1, 0, 1), ValueError);
}

namespace {

// Class c brightens rows [2c+1, 2c+3) a little over strong noise: the
// classes overlap, so training is not done after a step or two.
void write_split(const std::string& dir, const std::string& prefix, int n, unsigned seed) {
  test::write_stripes(dir, prefix, n, seed, {149, 30, true});
}

std::vector<float> weights(model::NeuralNetwork<float>& net) {
  std::vector<float> w;
  for (const auto& p : net.parameters()) {
    const Tensor<float> h = p->value().to(HOST);
    w.insert(w.end(), h.host_data(), h.host_data() + h.size());
  }
  return w;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float d = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

struct RankOutcome {
  RunResult result;
  std::vector<float> weights;
  std::int64_t steps = 0;  // on_batch_end calls
  std::string error;       // what the run threw, if it did
};

class TrainingAcrossRanks : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/magmadnn_ranks_" + std::to_string(::getpid());
    fs::create_directories(dir_);
    write_split(dir_, "train", 200, 1);
    write_split(dir_, "t10k", 50, 2);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // 160 training rows in global batches of 53: 53, 53, 53 and a last batch of
  // 1, so on 3 ranks the slices are 18/18/17 and then 1/0/0 (an empty slice).
  TrainSpec spec(std::int64_t epochs) const {
    return parse_config({{"name", "tiny"},
                         {"layers", Json::array({{{"type", "dense"}, {"units", 16}, {"activation", "relu"}},
                                                 {{"type", "dense"}, {"units", 3}, {"activation", "softmax"}}})},
                         {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.1}, {"momentum", 0.9}}},
                         {"epochs", epochs},
                         {"batch_size", 53},
                         {"seed", 11},
                         {"data", {{"dataset", "idx"}, {"dir", dir_}, {"val_split", 0.2}}}});
  }

  // Runs `spec` on `ranks` threads; each rank's outcome, in rank order.
  // `last_spec`, when given, is the last rank's instead.
  // `every`: a mid-epoch checkpoint every this many global batches;
  // `stop_after`: every rank stops training after this many steps (0: never).
  static std::vector<RankOutcome> run_on(int ranks, const TrainSpec& spec, const std::string& checkpoint = "",
                                         bool resume = false, const TrainSpec* last_spec = nullptr,
                                         std::int64_t every = 0, std::int64_t stop_after = 0) {
    auto comms = distributed::make_thread_group(ranks);
    std::vector<std::unique_ptr<TrainingRun>> runs;
    for (int r = 0; r < ranks; ++r) {  // seeding is global: one at a time
      runs.push_back(std::make_unique<TrainingRun>(r == ranks - 1 && last_spec ? *last_spec : spec));
    }
    std::vector<RankOutcome> out(static_cast<std::size_t>(ranks));
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        try {
          RunOptions o;
          o.communicator = comms[static_cast<std::size_t>(r)];
          o.checkpoint_path = checkpoint;
          o.resume = resume;
          o.checkpoint_every_steps = every;
          auto count = std::make_shared<model::LambdaCallback<float>>();
          count->batch_end = [&out, r, stop_after](model::NeuralNetwork<float>& m, const model::BatchLogs&) {
            if (++out[r].steps == stop_after) m.stop_training();
          };
          o.callbacks.push_back(count);
          out[r].result = runs[r]->run(o);
          out[r].weights = weights(runs[r]->network());
        } catch (...) {
          errors[r] = std::current_exception();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (std::size_t r = 0; r < errors.size(); ++r) {
      if (errors[r]) {
        try {
          std::rethrow_exception(errors[r]);
        } catch (const Error& e) {
          out[r].error = e.what();
        }
      }
    }
    return out;
  }

  std::string dir_;
};

}  // namespace

TEST_F(TrainingAcrossRanks, ThreeRanksEqualOneProcessOnTheSameGlobalBatch) {
  TrainingRun alone(spec(3));
  const RunResult one = alone.run();
  const std::vector<float> w1 = weights(alone.network());
  EXPECT_LT(one.history.front().train_accuracy, 0.95) << "the data must leave something to learn";
  const std::vector<RankOutcome> three = run_on(3, spec(3));
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankOutcome& o = three[r];
    ASSERT_EQ(o.error, "");
    EXPECT_EQ(o.steps, 3 * 4) << "every rank takes one step per global batch";
    EXPECT_EQ(o.weights, three[0].weights) << "the ranks hold the same weights";
    EXPECT_LT(max_abs_diff(o.weights, w1), 2e-5f);
    ASSERT_EQ(o.result.history.size(), 3u);
    for (std::size_t e = 0; e < 3; ++e) {
      EXPECT_NEAR(o.result.history[e].train_loss, one.history[e].train_loss, 1e-5) << "epoch " << e + 1;
      EXPECT_NEAR(o.result.history[e].train_accuracy, one.history[e].train_accuracy, 1e-12) << "epoch " << e + 1;
      EXPECT_NEAR(o.result.history[e].val_loss, one.history[e].val_loss, 1e-5) << "epoch " << e + 1;
      EXPECT_NEAR(o.result.history[e].val_accuracy, one.history[e].val_accuracy, 1e-12) << "epoch " << e + 1;
    }
    EXPECT_EQ(o.result.test.samples, 50);
    EXPECT_NEAR(o.result.test.accuracy, one.test.accuracy, 1e-12);
    EXPECT_NEAR(o.result.test.loss, one.test.loss, 1e-5);
    EXPECT_EQ(o.result.summary["ranks"], 3);
    EXPECT_EQ(o.result.summary["strategy"], "allreduce");
    EXPECT_TRUE(o.result.summary["timing"].contains("communication_seconds"));
  }
  EXPECT_EQ(one.summary["ranks"], 1);
  EXPECT_FALSE(one.summary.contains("strategy"));
}

// Loss scaling across ranks needs a strategy under which every rank skips
// the same steps (the registry's same_gradients_every_step trait); the
// refusal names those strategies and comes before any collective, so one
// rank of two alone sees it.
TEST_F(TrainingAcrossRanks, LossScalingIsRefusedUnderAStrategyThatDoesNotSumEveryStep) {
  TrainSpec s = spec(1);
  s.loss_scaling.mode = "on";
  s.distributed.strategy = "ps";
  TrainingRun run(s);
  RunOptions o;
  o.communicator = distributed::make_thread_group(2)[0];
  try {
    run.run(o);
    ADD_FAILURE() << "ps took loss scaling across ranks";
  } catch (const ConfigError& e) {
    // The strategies named are the registry's with the trait (the built-ins
    // allreduce and ring among them), so a new one needs no edit here.
    const std::vector<std::string> same = distributed::strategy_names_where(
        [](const distributed::StrategyTraits& t) { return t.same_gradients_every_step; });
    ASSERT_GE(same.size(), 2u);
    EXPECT_EQ(same.front(), "allreduce");
    EXPECT_NE(std::find(same.begin(), same.end(), "ring"), same.end());
    EXPECT_EQ(std::string(e.what()), "loss_scaling: loss scaling across ranks needs the " + names_text(same) +
                                         " strategy (every rank must skip the same steps), not ps");
  }
}

TEST_F(TrainingAcrossRanks, ACheckpointResumesOnAnotherRankCount) {
  TrainingRun alone(spec(4));
  alone.run();
  const std::vector<float> uninterrupted = weights(alone.network());

  const std::string ckpt = dir_ + "/two.ckpt";
  ASSERT_EQ(run_on(2, spec(2), ckpt)[0].error, "");
  ASSERT_TRUE(fs::exists(ckpt));
  for (int ranks : {1, 4}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    const std::string mine = dir_ + "/resume" + std::to_string(ranks) + ".ckpt";
    fs::copy_file(ckpt, mine, fs::copy_options::overwrite_existing);
    const std::vector<RankOutcome> rest = run_on(ranks, spec(4), mine, /*resume=*/true);
    for (const RankOutcome& o : rest) ASSERT_EQ(o.error, "");
    ASSERT_EQ(rest[0].result.history.size(), 4u) << "the two epochs before the checkpoint are in the history";
    EXPECT_EQ(rest[0].steps, 2 * 4) << "two epochs of four global batches after the resume";
    EXPECT_LT(max_abs_diff(rest[0].weights, uninterrupted), 5e-5f);
    EXPECT_EQ(rest.back().weights, rest[0].weights);
  }
}

// A mid-epoch checkpoint of 3 ranks (the slices 18/18/17 and 1/0/0) holds
// the global cursor and the sums of every rank: resumed on 1 and on 4 ranks
// it ends at the uninterrupted weights and epoch records.
TEST_F(TrainingAcrossRanks, AMidEpochCheckpointResumesOnAnotherRankCount) {
  TrainingRun alone(spec(3));
  const RunResult one = alone.run();
  const std::vector<float> uninterrupted = weights(alone.network());

  const std::string ckpt = dir_ + "/mid.ckpt";
  // Four global batches an epoch, a checkpoint after the second of each:
  // stopped after step 7 (batch 3 of epoch 2), the file holds batch 2 of epoch 2.
  const std::vector<RankOutcome> cut = run_on(3, spec(3), ckpt, false, nullptr, /*every=*/2, /*stop_after=*/7);
  for (const RankOutcome& o : cut) ASSERT_EQ(o.error, "");
  const io::Checkpoint ck = io::read_checkpoint(ckpt);
  ASSERT_EQ(ck.get_int("train.epoch"), 1);
  ASSERT_EQ(ck.get_int("train.batch"), 2);
  EXPECT_EQ(ck.get_int("train.partial_samples"), 2 * 53) << "the sums of all three ranks";
  for (int ranks : {1, 4}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    const std::string mine = dir_ + "/mid" + std::to_string(ranks) + ".ckpt";
    fs::copy_file(ckpt, mine, fs::copy_options::overwrite_existing);
    const std::vector<RankOutcome> rest = run_on(ranks, spec(3), mine, /*resume=*/true, nullptr, /*every=*/2);
    for (const RankOutcome& o : rest) ASSERT_EQ(o.error, "");
    EXPECT_EQ(rest[0].steps, 2 + 4) << "the rest of epoch 2, then epoch 3";
    EXPECT_LT(max_abs_diff(rest[0].weights, uninterrupted), 5e-5f);
    EXPECT_EQ(rest.back().weights, rest[0].weights);
    ASSERT_EQ(rest[0].result.history.size(), 3u);
    for (std::size_t e = 0; e < 3; ++e) {
      EXPECT_NEAR(rest[0].result.history[e].train_loss, one.history[e].train_loss, 1e-5) << "epoch " << e + 1;
      EXPECT_NEAR(rest[0].result.history[e].train_accuracy, one.history[e].train_accuracy, 1e-12) << "epoch " << e + 1;
    }
  }
}

// Rank 0 cannot write its checkpoint (the folder it names is a file): every
// rank stops right there with the reason, at an epoch's end and mid-epoch,
// instead of the others waiting in the next step's collective. Before, rank
// 1 hung in this test (the test's thread communicator then waited without a timeout).
TEST_F(TrainingAcrossRanks, RankZerosFailedCheckpointStopsEveryRankWithItsReason) {
  const std::string blocker = dir_ + "/not_a_folder";
  { std::ofstream(blocker) << "a file where the checkpoint's folder should be"; }
  const std::string ckpt = blocker + "/run.ckpt";
  for (const std::int64_t every : {std::int64_t{0}, std::int64_t{2}}) {
    SCOPED_TRACE(every == 0 ? "at the first epoch's end" : "at the second global batch");
    const std::vector<RankOutcome> r = run_on(2, spec(3), ckpt, false, nullptr, every);
    ASSERT_NE(r[0].error, "");
    EXPECT_NE(r[0].error.find("not_a_folder"), std::string::npos) << r[0].error;
    EXPECT_NE(r[1].error.find("rank 1: rank 0 could not write the checkpoint " + ckpt), std::string::npos)
        << r[1].error;
    EXPECT_NE(r[1].error.find(r[0].error), std::string::npos) << "rank 1 quotes rank 0's error: " << r[1].error;
    EXPECT_EQ(r[0].steps, r[1].steps) << "both stop at the same step";
    // An epoch is four global batches; a mid-epoch checkpoint comes before
    // its batch's callbacks, which count the steps.
    EXPECT_EQ(r[1].steps, every == 0 ? 4 : 1);
  }
}

TEST_F(TrainingAcrossRanks, ARankWithOtherDataIsNamedBeforeTraining) {
  TrainSpec other = spec(1);
  other.data.limit_train = 150;
  const std::vector<RankOutcome> r = run_on(3, spec(1), "", false, &other);
  EXPECT_NE(r[2].error.find("rank 2: the training data differs from rank 0's"), std::string::npos) << r[2].error;
  EXPECT_NE(r[0].error.find("rank 0: the training data of 1 rank(s) differs from rank 0's"), std::string::npos)
      << r[0].error;
  EXPECT_EQ(r[0].steps, 0);
}

// Batch growth grows the global batch; the slices follow it epoch by epoch.
TEST_F(TrainingAcrossRanks, AGrowingGlobalBatchIsSplitAsItGrows) {
  TrainSpec s = spec(3);
  s.batch_growth = {true, 2, 1, 106};  // 53, 106, 106
  TrainingRun alone(s);
  alone.run();
  const std::vector<float> w1 = weights(alone.network());
  const std::vector<RankOutcome> three = run_on(3, s);
  for (const RankOutcome& o : three) {
    ASSERT_EQ(o.error, "");
    EXPECT_EQ(o.steps, 4 + 2 + 2);
    EXPECT_LT(max_abs_diff(o.weights, w1), 2e-5f);
  }
}

#if MAGMADNN_HAVE_IMAGES
// An image folder across ranks: batches decoded and randomly cropped on each
// rank give the one-process run; copies of the folder at other paths are
// the same data, a copy with one more image is named before training.
TEST_F(TrainingAcrossRanks, AnImageFolderTrainsAsInOneProcessFromCopiesAtOtherPaths) {
  const std::string a = dir_ + "/folder_a", b = dir_ + "/folder_b";
  for (const char* split : {"train", "test"}) {
    for (int c = 0; c < 2; ++c) {
      const fs::path cls = fs::path(a) / split / ("class" + std::to_string(c));
      fs::create_directories(cls);
      for (int i = 0; i < (std::string(split) == "train" ? 9 : 3); ++i) {
        test::write_png((cls / ("x" + std::to_string(i) + ".png")).string(), 10, 9, 3,
                        test::pattern(10, 9, 3, c * 40 + i));
      }
    }
  }
  fs::copy(a, b, fs::copy_options::recursive);
  auto folder_spec = [](const std::string& root) {
    return parse_config({{"name", "folder"},
                         {"layers", Json::array({{{"type", "flatten"}},
                                                 {{"type", "dense"}, {"units", 2}, {"activation", "softmax"}}})},
                         {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.1}}},
                         {"epochs", 2},
                         {"batch_size", 6},
                         {"seed", 5},
                         {"data", {{"dataset", "folder"}, {"train", root + "/train"}, {"test", root + "/test"},
                                   {"shape", {3, 6, 6}}, {"val_split", 0}}}});
  };
  TrainingRun alone(folder_spec(a));
  const RunResult one = alone.run();
  const std::vector<float> w1 = weights(alone.network());
  const TrainSpec other_path = folder_spec(b);
  const std::vector<RankOutcome> two = run_on(2, folder_spec(a), "", false, &other_path);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_EQ(two[r].error, "");
    EXPECT_LT(max_abs_diff(two[r].weights, w1), 2e-5f);
    EXPECT_NEAR(two[r].result.test.loss, one.test.loss, 1e-5);
  }
  test::write_png(b + "/train/class1/extra.png", 10, 9, 3, test::pattern(10, 9, 3, 99));
  const std::vector<RankOutcome> differ = run_on(2, folder_spec(a), "", false, &other_path);
  EXPECT_NE(differ[1].error.find("rank 1: the training data differs from rank 0's"), std::string::npos)
      << differ[1].error;
}
#endif
