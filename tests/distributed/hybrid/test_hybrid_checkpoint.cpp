// Checkpoints of networks split over the ranks (NeuralNetwork::save / load
// with model-parallel layers): LeNet-5 under "auto" (the dense pair split,
// momentum SGD, so every split weight has a split optimizer slot), 4 steps
// of 10 rows with a mid-epoch checkpoint after step 2. (a) Resumed on the
// same ranks it ends as the uninterrupted run; (b) its file equals, tensor
// for tensor, the one a one-process run writes at the same step (also under
// "model", channel-parallel convolutions); (c) it resumes on one process,
// and a one-process checkpoint resumes split; (d) a checkpoint of another
// shape is refused; (e) a write that fails on rank 0 stops every rank with
// its reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "distributed/hybrid/hybrid_support.h"
#include "magmadnn.h"
#include "magmadnn/io/checkpoint.h"
#include "magmadnn/run/across_ranks.h"
#include "magmadnn/run/build_network.h"
#include "magmadnn/run/data_parallel.h"
#include "magmadnn/run/presets.h"

namespace {
using namespace magmadnn;
using hybrid_test::strategy_world;

constexpr int kSteps = 4, kAt = 2;  // steps in the epoch; the checkpoint follows step kAt
const std::vector<std::int64_t> kSample{1, 28, 28};

// LeNet-5 under `parallel` ("auto": the dense pair split; "model": the
// convolutions channel-parallel too, and the head split and gathered).
run::TrainSpec lenet5(const std::string& parallel = "auto", std::int64_t first_dense_units = 120) {
  run::Json j = run::preset("lenet5");
  j["optimizer"] = {{"type", "sgd"}, {"learning_rate", 0.05}, {"momentum", 0.9}};
  j["schedule"] = {{"type", "constant"}};
  j["batch_size"] = 10;
  j["distributed"] = {{"parallel", parallel}};
  for (auto& l : j["layers"]) {
    if (l["type"] == "dense") {
      l["units"] = first_dense_units;
      break;
    }
  }
  return run::parse_config(j);
}

// One folder for every rank of this launch (the launcher is every rank's
// parent), apart from other launches' and rank counts'.
std::string shared_dir(const char* test) {
  const auto world = strategy_world();
  const std::string dir = ::testing::TempDir() + "/magmadnn_hybrid_ckpt_" + std::to_string(::getppid()) + "_" +
                          std::to_string(world->size()) + "_" + test;
  std::filesystem::create_directories(dir);
  return dir;
}

struct Trained {
  run::NetworkBuild build;
  double last_loss = 0;
};

// One epoch of the synthetic set on the network of `spec`, split over
// `group` (null: one process). With `checkpoint`: a checkpoint after step
// kAt, or (resume) training goes on from it. stop_after > 0 stops after that step.
std::unique_ptr<Trained> train(const run::TrainSpec& spec, const std::shared_ptr<distributed::Communicator>& group,
                               const std::string& checkpoint, bool resume, int stop_after = 0) {
  const auto [x, y] = hybrid_test::synthetic(spec.batch_size * kSteps, kSample, 10);
  auto t = std::make_unique<Trained>();
  t->build = run::build_network(spec, kSample, kSteps, 10, 1, group);
  model::NeuralNetwork<float>& net = *t->build.model;
  model::FitOptions<float> fo;
  fo.epochs = 1;
  if (!checkpoint.empty()) {
    fo.checkpoint_path = checkpoint;
    fo.checkpoint_every_batches = kAt;
    fo.resume = resume;
  }
  std::unique_ptr<run::DataParallel> dp;
  if (group && group->size() > 1) {
    dp = std::make_unique<run::DataParallel>(group, spec.distributed, net, t->build.exchange);
  }
  auto cb = std::make_shared<model::LambdaCallback<float>>();
  Trained* out = t.get();
  cb->batch_end = [out, stop_after](model::NeuralNetwork<float>& m, const model::BatchLogs& logs) {
    out->last_loss = logs.loss;
    if (stop_after > 0 && m.optimizer().step_count() == stop_after) m.stop_training();
  };
  fo.callbacks.push_back(cb);
  net.fit(data::Samples<float>(x), y, fo);
  if (dp) dp->finish();
  return t;
}

// The float tensors of a checkpoint by name.
std::map<std::string, std::vector<float>> tensors_of(const io::Checkpoint& ck) {
  std::map<std::string, std::vector<float>> m;
  for (const auto& r : ck.tensors()) {
    std::vector<float> v(r.data.size() / sizeof(float));
    std::memcpy(v.data(), r.data.data(), v.size() * sizeof(float));
    m[r.name] = std::move(v);
  }
  return m;
}

// The largest difference between two checkpoints' tensors relative to each
// tensor's largest value; every name and shape must match.
double checkpoint_difference(const std::string& got_path, const std::string& want_path) {
  const io::Checkpoint got = io::read_checkpoint(got_path), want = io::read_checkpoint(want_path);
  EXPECT_EQ(got.tensors().size(), want.tensors().size());
  const auto g = tensors_of(got), w = tensors_of(want);
  double worst = 0;
  for (const auto& r : want.tensors()) {
    const auto it = std::find_if(got.tensors().begin(), got.tensors().end(),
                                 [&](const io::TensorRecord& q) { return q.name == r.name; });
    if (it == got.tensors().end()) {
      ADD_FAILURE() << "tensor " << r.name << " is missing from " << got_path;
      continue;
    }
    EXPECT_EQ(it->shape, r.shape) << r.name;
    const auto& a = g.at(r.name);
    const auto& b = w.at(r.name);
    if (a.size() != b.size()) continue;
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
      diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
      scale = std::max(scale, std::abs(double(b[i])));
    }
    worst = std::max(worst, scale > 0 ? diff / scale : diff);
  }
  for (const char* key : {"model.params", "optimizer.step_count", "train.epoch", "train.batch"}) {
    EXPECT_EQ(got.get(key), want.get(key)) << key;
  }
  return worst;
}

// The largest difference between this rank's parameters of two networks
// built alike, relative to each tensor's largest value.
double parameter_difference(model::NeuralNetwork<float>& a, model::NeuralNetwork<float>& b) {
  double worst = 0;
  EXPECT_EQ(a.parameters().size(), b.parameters().size());
  for (std::size_t i = 0; i < std::min(a.parameters().size(), b.parameters().size()); ++i) {
    const auto x = a.parameters()[i]->output().to_vector(), y = b.parameters()[i]->output().to_vector();
    EXPECT_EQ(x.size(), y.size());
    double diff = 0, scale = 0;
    for (std::size_t k = 0; k < std::min(x.size(), y.size()); ++k) {
      diff = std::max(diff, std::abs(double(x[k]) - double(y[k])));
      scale = std::max(scale, std::abs(double(y[k])));
    }
    worst = std::max(worst, scale > 0 ? diff / scale : diff);
  }
  return worst;
}

// (a) The same rank count: the checkpoint holds the weights and the momentum
// exactly (a gather and a cut copy values), the data order depends on (seed,
// epoch) alone and the collectives run as before, so the resumed steps are
// the uninterrupted ones: measured bit for bit. Asserted to 1e-6 relative,
// not exactly, so that a kernel whose rounding depends on where its buffers
// lie (the resumed network is allocated anew) cannot make the test flaky.
TEST(HybridCheckpoint, ResumedSplitRunEndsAsTheUninterruptedRun) {
  const auto world = strategy_world();
  const std::string dir = shared_dir("a"), ck = dir + "/split.bin";
  const run::TrainSpec spec = lenet5();
  const auto whole = train(spec, world, "", false);
  train(spec, world, ck, false, kAt);
  world->barrier();  // rank 0 has written it
  const auto resumed = train(spec, world, ck, true);
  EXPECT_EQ(resumed->build.model->optimizer().step_count(), kSteps);
  const double dw = parameter_difference(*resumed->build.model, *whole->build.model);
  EXPECT_LE(dw, 1e-6) << "weights after the resumed steps";
  EXPECT_NEAR(resumed->last_loss, whole->last_loss, 1e-6 * std::abs(whole->last_loss));
  ASSERT_EQ(resumed->build.model->history().size(), 1u);
  const double epoch_loss = whole->build.model->history().back().train_loss;
  EXPECT_NEAR(resumed->build.model->history().back().train_loss, epoch_loss, 1e-6 * std::abs(epoch_loss));
  if (world->rank() == 0) {
    std::printf("checkpoint after step %d on %d ranks, resumed: last loss %.7f (uninterrupted %.7f), largest weight "
                "difference %.1e\n",
                kAt, world->size(), resumed->last_loss, whole->last_loss, dw);
  }
  world->barrier();
  if (world->rank() == 0) std::filesystem::remove_all(dir);
}

// (b) The split run's checkpoint is the one-process run's: the same names
// and shapes, the values within float rounding (the split layers sum their
// products in another order). Under "auto" the dense pair is split (W along
// axis 0 and 1); under "model" the convolutions' filters and biases too
// (axis 0), and the head is column-parallel.
void expect_the_one_process_checkpoint(const std::string& parallel) {
  const auto world = strategy_world();
  const std::string dir = shared_dir(("b_" + parallel).c_str()), split = dir + "/split.bin", one = dir + "/one.bin";
  const run::TrainSpec spec = lenet5(parallel);
  train(spec, world, split, false, kAt);
  if (world->rank() == 0) {
    train(spec, nullptr, one, false, kAt);
    const double d = checkpoint_difference(split, one);
    EXPECT_LE(d, 1e-5);
    std::printf("LeNet-5 (%s): checkpoint after step %d on %d ranks against one process's: largest relative "
                "difference %.2e\n",
                parallel.c_str(), kAt, world->size(), d);
    std::filesystem::remove_all(dir);
  }
  world->barrier();
}

TEST(HybridCheckpoint, SplitCheckpointEqualsTheOneProcessCheckpoint) { expect_the_one_process_checkpoint("auto"); }

TEST(HybridCheckpoint, ChannelParallelCheckpointEqualsTheOneProcessCheckpoint) {
  expect_the_one_process_checkpoint("model");
}

// (c) Another rank count: the P-rank checkpoint resumed on one process, and
// the one-process checkpoint resumed on P ranks, end where the uninterrupted
// split run ends (compared through the checkpoints each writes at the end).
TEST(HybridCheckpoint, CheckpointsMoveBetweenOneProcessAndASplitRun) {
  const auto world = strategy_world();
  const std::string dir = shared_dir("c");
  const std::string split = dir + "/split.bin", one = dir + "/one.bin";
  const run::TrainSpec spec = lenet5();
  train(spec, world, split, false, kAt);
  if (world->rank() == 0) train(spec, nullptr, one, false, kAt);
  world->barrier();

  const auto whole = train(spec, world, "", false);
  whole->build.model->save(dir + "/end_whole.bin");  // a collective: rank 0 writes
  const auto from_one = train(spec, world, one, true);
  from_one->build.model->save(dir + "/end_from_one.bin");
  world->barrier();
  if (world->rank() == 0) {
    const auto from_split = train(spec, nullptr, split, true);
    EXPECT_EQ(from_split->build.model->optimizer().step_count(), kSteps);
    from_split->build.model->save(dir + "/end_from_split.bin");
    const double on_one = checkpoint_difference(dir + "/end_from_split.bin", dir + "/end_whole.bin");
    const double on_split = checkpoint_difference(dir + "/end_from_one.bin", dir + "/end_whole.bin");
    EXPECT_LE(on_one, 1e-5) << "the " << world->size() << "-rank checkpoint resumed on one process";
    EXPECT_LE(on_split, 1e-5) << "the one-process checkpoint resumed on " << world->size() << " ranks";
    std::printf("after %d steps against the uninterrupted %d-rank run: %d-rank checkpoint resumed on one process "
                "%.2e, one-process checkpoint resumed on %d ranks %.2e (largest relative differences)\n",
                kSteps, world->size(), world->size(), on_one, world->size(), on_split);
    std::filesystem::remove_all(dir);
  }
  world->barrier();
}

// A checkpoint of another network (the first dense layer 100 units, not
// 120) is refused by the split network before anything changes, naming the
// tensor and the whole shapes.
TEST(HybridCheckpoint, ACheckpointOfAnotherShapeIsRefusedNamingTheWholeTensor) {
  const auto world = strategy_world();
  const std::string dir = shared_dir("d"), other = dir + "/other.bin";
  if (world->rank() == 0) {
    run::NetworkBuild b = run::build_network(lenet5("auto", 100), kSample, kSteps, 10, 1, nullptr);
    b.model->save(other);
  }
  world->barrier();
  run::NetworkBuild split = run::build_network(lenet5(), kSample, kSteps, 10, 1, world);
  const std::vector<float> before = split.model->parameters().back()->output().to_vector();
  try {
    split.model->load(other);
    ADD_FAILURE() << "a checkpoint of another shape loaded";
  } catch (const ShapeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("param/"), std::string::npos) << what;
    EXPECT_NE(what.find("fullyconnected/W"), std::string::npos) << what;
    EXPECT_NE(what.find("{120, 400}"), std::string::npos) << what;  // the whole layer's W, not this rank's part
    if (world->rank() == 0) std::printf("refused: %s\n", what.c_str());
  }
  EXPECT_EQ(split.model->parameters().back()->output().to_vector(), before);
  world->barrier();
  if (world->rank() == 0) std::filesystem::remove_all(dir);
}

// (e) Rank 0 cannot write the split run's checkpoint (its folder is a
// file): every rank stops at that step with rank 0's reason. Before, each
// rank saved through its own Checkpointer callback, rank 0 threw, and the
// others ran on into the next step's collectives, where the descriptor
// check reported a mismatch (or the watchdog a timeout) instead of the cause.
TEST(HybridCheckpoint, RankZerosFailedWriteStopsEveryRankWithItsReason) {
  const auto world = strategy_world();
  const std::string dir = shared_dir("e"), blocker = dir + "/not_a_folder", ck = blocker + "/split.bin";
  if (world->rank() == 0) std::ofstream(blocker) << "a file where the checkpoint's folder should be";
  world->barrier();
  std::string error;
  try {
    train(lenet5(), world, ck, false);
  } catch (const std::exception& e) {
    error = e.what();
  }
  ASSERT_NE(error, "") << "rank " << world->rank() << " trained past the failed checkpoint";
  EXPECT_NE(error.find("not_a_folder"), std::string::npos) << error;
  if (world->rank() > 0) {
    EXPECT_NE(error.find("rank " + std::to_string(world->rank()) + ": rank 0 could not write the checkpoint " + ck),
              std::string::npos)
        << error;
  }
  world->barrier();  // every rank stopped at the same point: the next collective matches
  if (world->rank() == 0) std::filesystem::remove_all(dir);
}

}  // namespace
