// Hybrid plans (run/parallel_plan.h) trained across ranks against the same
// config on one process, step for step: the wide MLP of issue 17 (784 ->
// 4096 -> 4096 -> 10) under "model" and under "auto", and LeNet-5 under
// "auto" (convolutions data-parallel on batch shards, the dense pair split,
// the 10-class head replicated). Every rank also trains the one-process
// network on the same global batches and checks, after every step, the loss
// and every weight (a split layer: this rank's slice). Then a whole
// TrainingRun of a hybrid plan: its summary's weight memory (1/P of the
// split layers per rank) and its test score against one process's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn.h"
#include "magmadnn/core/shard.h"
#include "magmadnn/parallel/model_parallel/group_tensor.h"
#include "magmadnn/parallel/layers/parallel_conv2d.h"
#include "magmadnn/parallel/layers/parallel_fully_connected.h"
#include "magmadnn/run/across_ranks.h"
#include "magmadnn/run/build_network.h"
#include "magmadnn/run/data_parallel.h"
#include "magmadnn/run/presets.h"
#include "magmadnn/run/run_training.h"
#include "support/run_fixtures.h"
#include "distributed/hybrid/hybrid_support.h"

namespace {
using namespace magmadnn;
using magmadnn::Shard;
using magmadnn::shard_of;
using hybrid_test::strategy_world;
using hybrid_test::synthetic;

// The largest |got - want| over the elements, and the largest |want|.
struct Diff {
  double worst = 0, scale = 0;
};
Diff diff(const Tensor<float>& got, const Tensor<float>& want) {
  EXPECT_EQ(got.shape(), want.shape());
  Diff d;
  if (got.shape() != want.shape()) return {INFINITY, 0};
  const auto g = got.to_vector(), w = want.to_vector();
  for (std::size_t i = 0; i < w.size(); ++i) {
    d.worst = std::max(d.worst, std::abs(double(g[i]) - double(w[i])));
    d.scale = std::max(d.scale, std::abs(double(w[i])));
  }
  return d;
}

// The part of a one-process weight that `par`'s layer holds on this rank.
Tensor<float> my_part(const layer::Layer<float>& par, std::size_t k, const Tensor<float>& whole) {
  if (const auto* c = dynamic_cast<const layer::ParallelConv2DLayer<float>*>(&par)) {
    const Shard s = c->channel_shard();  // filters and bias entries alike, along axis 0
    return Tensor<float>(whole.slice(s.offset, s.offset + s.extent));
  }
  const auto* p = dynamic_cast<const layer::ParallelFullyConnectedLayer<float>*>(&par);
  if (p == nullptr) return Tensor<float>(whole);
  const Shard s = p->weight_shard();
  const bool is_w = k == 0;
  if (p->split() == layer::ModelSplit::column) return Tensor<float>(whole.slice(s.offset, s.offset + s.extent));
  return is_w ? distributed::mp::take_columns(whole, s) : Tensor<float>(whole);  // a row layer's b is whole
}

// The largest relative difference between the split network's weights and
// this rank's parts of the reference's (relative to each tensor's largest value).
double weight_error(model::NeuralNetwork<float>& par, model::NeuralNetwork<float>& ref) {
  const auto& pl = par.layers();
  const auto& rl = ref.layers();
  EXPECT_EQ(pl.size(), rl.size());
  double worst = 0;
  for (std::size_t i = 0; i < std::min(pl.size(), rl.size()); ++i) {
    const auto& pw = pl[i]->get_weights();
    const auto& rw = rl[i]->get_weights();
    EXPECT_EQ(pw.size(), rw.size()) << "layer " << i;
    for (std::size_t k = 0; k < std::min(pw.size(), rw.size()); ++k) {
      const Diff d = diff(pw[k]->output(), my_part(*pl[i], k, rw[k]->output()));
      worst = std::max(worst, d.scale > 0 ? d.worst / d.scale : d.worst);
    }
  }
  return worst;
}

struct StepLog {
  std::vector<double> losses;
  std::vector<double> weight_errors;  // the split network's only
};

// Trains `spec` for `steps` SGD steps of `batch` rows, split over the world
// and on one process, and returns the losses of both and the weight error
// after every step.
struct Compared {
  StepLog par, ref;
  run::NetworkBuild build;
};
Compared train_both(const run::TrainSpec& spec, std::vector<std::int64_t> sample, std::int64_t classes, int steps) {
  const auto world = strategy_world();
  const auto [x, y] = synthetic(spec.batch_size * steps, sample, classes);
  Compared c;
  c.build = run::build_network(spec, sample, steps, classes, 1, world);
  run::NetworkBuild ref = run::build_network(spec, sample, steps, classes, 1, nullptr);
  model::NeuralNetwork<float>& pn = *c.build.model;
  model::NeuralNetwork<float>& rn = *ref.model;
  EXPECT_EQ(c.build.split, world->size() > 1);
  EXPECT_EQ(weight_error(pn, rn), 0.0) << "the initial weights differ";

  // The reference steps first, all of them; its weights after each step are kept.
  std::vector<std::vector<Tensor<float>>> ref_weights;
  {
    model::FitOptions<float> fo;
    fo.epochs = 1;
    auto cb = std::make_shared<model::LambdaCallback<float>>();
    cb->batch_end = [&](model::NeuralNetwork<float>& m, const model::BatchLogs& logs) {
      c.ref.losses.push_back(logs.loss);
      std::vector<Tensor<float>> w;
      for (const auto& p : m.parameters()) w.emplace_back(p->output());
      ref_weights.push_back(std::move(w));
    };
    fo.callbacks.push_back(cb);
    rn.fit(data::Samples<float>(x), y, fo);
  }
  std::unique_ptr<run::DataParallel> dp;
  model::FitOptions<float> fo;
  fo.epochs = 1;
  if (world->size() > 1) {
    dp = std::make_unique<run::DataParallel>(world, spec.distributed, pn, c.build.exchange);
  }
  auto cb = std::make_shared<model::LambdaCallback<float>>();
  cb->batch_end = [&](model::NeuralNetwork<float>& m, const model::BatchLogs& logs) {
    const std::size_t step = c.par.losses.size();
    c.par.losses.push_back(logs.loss);
    // The reference's weights after this step, put back for the comparison.
    const auto& params = rn.parameters();
    for (std::size_t i = 0; i < params.size(); ++i) params[i]->value().copy_from(ref_weights[step][i]);
    c.par.weight_errors.push_back(weight_error(m, rn));
  };
  fo.callbacks.push_back(cb);
  pn.fit(data::Samples<float>(x), y, fo);
  if (dp) dp->finish();
  return c;
}

void expect_step_for_step(const Compared& c, int steps, const char* name) {
  ASSERT_EQ(c.par.losses.size(), static_cast<std::size_t>(steps));
  ASSERT_EQ(c.ref.losses.size(), static_cast<std::size_t>(steps));
  double worst_loss = 0, worst_weight = 0;
  for (int s = 0; s < steps; ++s) {
    const double rel = std::abs(c.par.losses[s] - c.ref.losses[s]) / std::abs(c.ref.losses[s]);
    worst_loss = std::max(worst_loss, rel);
    worst_weight = std::max(worst_weight, c.par.weight_errors[s]);
    EXPECT_LE(rel, 1e-5) << name << " step " << s + 1 << ": loss " << c.par.losses[s] << ", one process "
                         << c.ref.losses[s];
    EXPECT_LE(c.par.weight_errors[s], 1e-5) << name << " step " << s + 1;
  }
  const auto world = strategy_world();
  if (world->rank() == 0) {
    std::printf("%s on %d ranks: losses", name, world->size());
    for (double l : c.par.losses) std::printf(" %.7f", l);
    std::printf("; largest relative loss difference %.2e, weight difference %.2e\n", worst_loss, worst_weight);
  }
}

run::TrainSpec wide_mlp(const std::string& parallel) {
  run::Json j;
  j["layers"] = run::Json::array({{{"type", "flatten"}},
                                  {{"type", "dense"}, {"units", 4096}, {"activation", "relu"}},
                                  {{"type", "dense"}, {"units", 4096}, {"activation", "relu"}},
                                  {{"type", "dense"}, {"units", 10}, {"activation", "softmax"}}});
  j["optimizer"] = {{"type", "sgd"}, {"learning_rate", 0.005}};
  j["batch_size"] = 8;
  j["distributed"] = {{"parallel", parallel}};
  return run::parse_config(j);
}

TEST(HybridTraining, WideMlpModelMatchesOneProcessStepForStep) {
  const run::TrainSpec spec = wide_mlp("model");
  const Compared c = train_both(spec, {1, 28, 28}, 10, 3);
  // flatten, column, row, column with its output gathered.
  EXPECT_EQ(c.build.plan.layers[3].placement, run::Placement::column_gathered);
  expect_step_for_step(c, 3, "wide MLP, model");
}

TEST(HybridTraining, WideMlpAutoMatchesOneProcessStepForStep) {
  const run::TrainSpec spec = wide_mlp("auto");
  const Compared c = train_both(spec, {1, 28, 28}, 10, 3);
  EXPECT_EQ(c.build.plan.layers[3].placement, run::Placement::replicated);
  // Nothing is data-parallel: no parameter is exchanged.
  for (bool e : c.build.exchange) EXPECT_FALSE(e);
  expect_step_for_step(c, 3, "wide MLP, auto");
}

// Every optimizer kind on split layers (a column, a row and a gathered
// column layer) against one process: an optimizer whose step reads a
// whole-tensor norm (LARS, LAMB) must sum its slices' parts over the group
// (issue 39 point 4: before, each rank took the trust ratio of its slice,
// and the runs parted from the first step on 2 and 3 ranks).
TEST(HybridTraining, EveryOptimizerKindOnSplitLayersMatchesOneProcessStepForStep) {
  const std::vector<run::Json> optimizers = {
      {{"type", "sgd"}, {"learning_rate", 0.05}},
      {{"type", "sgd"}, {"learning_rate", 0.05}, {"momentum", 0.9}, {"nesterov", true}, {"weight_decay", 0.01}},
      {{"type", "adam"}, {"learning_rate", 0.01}},
      {{"type", "adamw"}, {"learning_rate", 0.01}, {"weight_decay", 0.1}},
      {{"type", "adagrad"}, {"learning_rate", 0.05}},
      {{"type", "rmsprop"}, {"learning_rate", 0.01}},
      {{"type", "lars"}, {"learning_rate", 1.0}, {"trust_coefficient", 0.01}, {"momentum", 0.9},
       {"weight_decay", 0.001}},
      {{"type", "lars"}, {"learning_rate", 1.0}, {"trust_coefficient", 0.01}, {"exclude_vectors", true}},
      {{"type", "lamb"}, {"learning_rate", 0.01}, {"weight_decay", 0.01}},
      {{"type", "lamb"}, {"learning_rate", 0.01}, {"exclude_vectors", true}},
  };
  for (const run::Json& o : optimizers) {
    run::Json j;
    j["layers"] = run::Json::array({{{"type", "flatten"}},
                                    {{"type", "dense"}, {"units", 24}, {"activation", "relu"}},
                                    {{"type", "dense"}, {"units", 20}, {"activation", "relu"}},
                                    {{"type", "dense"}, {"units", 10}, {"activation", "softmax"}}});
    j["optimizer"] = o;
    j["schedule"] = {{"type", "constant"}};
    j["batch_size"] = 6;
    j["distributed"] = {{"parallel", "model"}};
    const run::TrainSpec spec = run::parse_config(j);
    const Compared c = train_both(spec, {1, 8, 8}, 10, 4);
    expect_step_for_step(c, 4, o.dump().c_str());
  }
}

// LeNet-5 (the preset) with SGD and momentum, batch 10: 3 ranks hold 4, 3
// and 3 rows, 4 ranks 3, 3, 2 and 2.
run::Json lenet5_auto() {
  run::Json j = run::preset("lenet5");
  j["optimizer"] = {{"type", "sgd"}, {"learning_rate", 0.05}, {"momentum", 0.9}};
  j["schedule"] = {{"type", "constant"}};
  j["batch_size"] = 10;
  j["distributed"] = {{"parallel", "auto"}};
  return j;
}

TEST(HybridTraining, LeNet5AutoMatchesOneProcessStepForStep) {
  const run::TrainSpec spec = run::parse_config(lenet5_auto());
  const Compared c = train_both(spec, {1, 28, 28}, 10, 3);
  EXPECT_EQ(c.build.plan.before_input, run::Transition::scatter_batch);
  EXPECT_EQ(c.build.plan.layers[5].before, run::Transition::gather_batch);
  if (c.build.split) {
    // The two convolutions' weights and biases are exchanged; nothing else.
    EXPECT_EQ(std::count(c.build.exchange.begin(), c.build.exchange.end(), true), 4);
  }
  expect_step_for_step(c, 3, "LeNet-5, auto");
}

// The head data-parallel after the split pair: the batch is cut again
// (scatter_batch, whose backward pass gathers the gradient for the pair) and
// joined before the loss (gather_batch).
TEST(HybridTraining, LeNet5WithADataParallelHeadMatchesOneProcessStepForStep) {
  run::Json j = lenet5_auto();
  j["layers"][7]["parallel"] = "data";
  const run::TrainSpec spec = run::parse_config(j);
  const Compared c = train_both(spec, {1, 28, 28}, 10, 3);
  EXPECT_EQ(c.build.plan.layers[7].before, run::Transition::scatter_batch);
  EXPECT_EQ(c.build.plan.before_loss, run::Transition::gather_batch);
  if (c.build.split) EXPECT_EQ(std::count(c.build.exchange.begin(), c.build.exchange.end(), true), 6);
  expect_step_for_step(c, 3, "LeNet-5, auto, data-parallel head");
}

// Every layer "model": both convolutions split by output channel (6 filters
// over 4 ranks: 2, 2, 1, 1), the dense pair split, the head column-parallel
// with its output gathered. Every rank computes on the whole batch, so no
// batch transition and no parameter is exchanged.
TEST(HybridTraining, LeNet5AllModelMatchesOneProcessStepForStep) {
  run::Json j = lenet5_auto();
  j["distributed"] = {{"parallel", "model"}};
  const run::TrainSpec spec = run::parse_config(j);
  const Compared c = train_both(spec, {1, 28, 28}, 10, 3);
  EXPECT_EQ(c.build.plan.layers[0].placement, run::Placement::channels);
  EXPECT_EQ(c.build.plan.layers[2].placement, run::Placement::channels);
  EXPECT_EQ(c.build.plan.layers[7].placement, run::Placement::column_gathered);
  EXPECT_EQ(c.build.plan.before_input, run::Transition::none);
  for (bool e : c.build.exchange) EXPECT_FALSE(e);
  expect_step_for_step(c, 3, "LeNet-5, model");
}

// The first convolution data-parallel, the second split by channels: the
// batch is joined before the second (gather_batch, whose backward pass hands
// each rank its rows of the gradient), and the first's gradients are summed.
TEST(HybridTraining, LeNet5DataThenChannelParallelConvMatchesOneProcessStepForStep) {
  run::Json j = lenet5_auto();
  j["layers"][2]["parallel"] = "model";
  const run::TrainSpec spec = run::parse_config(j);
  const Compared c = train_both(spec, {1, 28, 28}, 10, 3);
  EXPECT_EQ(c.build.plan.layers[0].placement, run::Placement::data);
  EXPECT_EQ(c.build.plan.layers[2].placement, run::Placement::channels);
  EXPECT_EQ(c.build.plan.layers[2].before, run::Transition::gather_batch);
  if (c.build.split) EXPECT_EQ(std::count(c.build.exchange.begin(), c.build.exchange.end(), true), 2);
  expect_step_for_step(c, 3, "LeNet-5, data conv then channel-parallel conv");
}

// A whole run of a hybrid plan: summary.json's weight memory and the test
// score against one process's. Every rank writes the same small data set.
TEST(HybridRun, SummaryRecordsEachRanksShareAndTheScoreOfOneProcess) {
  const auto world = strategy_world();
  const std::string dir = ::testing::TempDir() + "/magmadnn_hybrid_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  test::write_stripes(dir, "train", 150, 1, {149, 30, true});
  test::write_stripes(dir, "t10k", 60, 2, {149, 30, true});
  run::Json j;
  j["layers"] = run::Json::array({{{"type", "flatten"}},
                                  {{"type", "dense"}, {"units", 64}, {"activation", "relu"}},
                                  {{"type", "dense"}, {"units", 48}, {"activation", "relu"}},
                                  {{"type", "dense"}, {"units", 3}, {"activation", "softmax"}}});
  j["data"] = {{"dataset", "idx"}, {"dir", dir}};
  j["optimizer"] = {{"type", "sgd"}, {"learning_rate", 0.1}};
  j["epochs"] = 2;
  j["batch_size"] = 15;
  j["distributed"] = {{"parallel", "auto"}};
  const run::TrainSpec spec = run::parse_config(j);
  const int p = world->size();
  run::RunOptions ro;
  if (p > 1) ro.communicator = world;
  const run::RunResult r = run::TrainingRun(spec, p > 1 ? world : nullptr).run(ro);
  const run::RunResult one = run::TrainingRun(spec).run();
  std::filesystem::remove_all(dir);

  const run::Json& m = r.summary.at("memory");
  // The pair: W 64 x 64 (column) and 48 x 64 (row), b 64 (split) and 48 (whole).
  const std::int64_t whole_split = 4 * (64 * 64 + 64 + 48 * 64 + 48);
  EXPECT_EQ(m.at("model_parallel_weight_bytes_whole").get<std::int64_t>(), whole_split);
  const Shard s = shard_of(64, p, world->rank());
  const std::int64_t mine = 4 * (s.extent * 64 + s.extent + 48 * s.extent + 48);
  EXPECT_EQ(m.at("model_parallel_weight_bytes_per_rank").get<std::int64_t>(), mine);
  // 1/P of the whole, within one row and column of each layer (and the row layer's whole bias).
  EXPECT_NEAR(double(mine), double(whole_split) / p, 4.0 * (64 + 1 + 48 + 48));
  EXPECT_EQ(m.at("weight_bytes_whole_model").get<std::int64_t>(), whole_split + 4 * (3 * 48 + 3));
  EXPECT_EQ(m.at("weight_bytes_per_rank").get<std::int64_t>(), mine + 4 * (3 * 48 + 3));
  EXPECT_EQ(r.summary.at("parallel_plan").at("layers")[1].at("placement"), "column");
  if (world->rank() == 0) {
    std::printf("hybrid run on %d ranks: split weights %lld of %lld bytes per rank (%.4f); test loss %.7f, one "
                "process %.7f; accuracy %.4f, one process %.4f\n",
                p, static_cast<long long>(mine), static_cast<long long>(whole_split), double(mine) / whole_split,
                r.test.loss, one.test.loss, r.test.accuracy, one.test.accuracy);
  }
  EXPECT_NEAR(r.test.loss, one.test.loss, 1e-4 * std::abs(one.test.loss));
  EXPECT_EQ(r.test.accuracy, one.test.accuracy);
  if (p > 1) EXPECT_EQ(r.test_predictions.size(), 60u);
}

}  // namespace
