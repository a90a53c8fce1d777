/// @file run_training.h
/// A training run as a library call: the run specification (spec.h) in,
/// the history, the test evaluation and the summary out. The `magmadnn train`
/// command is this plus flags, a run folder and printing; a hyperparameter
/// search or a distributed run calls the same thing.
///
///   run::TrainSpec spec = run::parse_config(run::preset("mlp"));
///   run::RunResult r = run::run_training(spec);           // or, in steps:
///   run::TrainingRun tr(spec);                            // data loaded, network built
///   std::cout << tr.network().num_params();
///   run::RunResult r2 = tr.run(options);
///
/// What a run does, in order: loads the training split (data.limit_train),
/// holds data.val_split of it out for validation (seeded by spec.seed,
/// stratified), loads the test split, builds the network of spec.layers
/// (build_network.h), trains it with validation after every epoch (and early
/// stopping when the spec asks for it), then scores the test split once.
///
/// Requires: a spec from parse_config (its values are in range) and the
/// data set's files in spec.data.dir (IDX or CIFAR binary; none for
/// synthetic data: dataset.h, load_data), IOError naming what is missing.
/// With spec.test_every_epoch the test split is also scored after every
/// epoch (after validation, outside the epoch's timed training loop) into
/// RunResult::test_curve; those scores reach no callback decision, so
/// training is unchanged by them.
///
/// With spec.pipeline (docs/hybrid.md, "Pipelines") the layers train as a
/// pipeline, stage s on rank s of RunOptions::communicator, whose size must
/// be the stage count (refused before training otherwise, as are early
/// stopping, loss scaling, checkpoints inside an epoch and micro-batches
/// that do not divide the last training batch). At each epoch's end every
/// rank's network() takes the whole trained network (weights, optimizer
/// state, layer state) and the history, rank 0 writes the checkpoint, which
/// is the one-process network's (it resumes as a pipeline or in one
/// process, and a one-process checkpoint of an epoch's end resumes as a
/// pipeline), and the callbacks hear on_epoch_end; they hear no batch. The
/// plan, with what each stage measured, is summary.json's "pipeline" and
/// RunOptions::log's first lines (rank 0); test_predictions holds every
/// test sample's class on every rank.
///
/// Guarantees: a spec whose epochs, batch_size, data limits or patience lie
/// outside their limits:: range throws ValueError before anything is loaded;
/// the same spec and seed give the same run; the test split is
/// touched once, after training; RunResult::summary holds the keys
/// documented in docs/cli.md (summary.json).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/model/callbacks.h"
#include "magmadnn/model/neural_network.h"
#include "magmadnn/run/build_network.h"
#include "magmadnn/run/dataset.h"
#include "magmadnn/run/spec.h"

namespace magmadnn::run {

struct InputRecord;  // across_ranks.h

struct RunOptions {
  /// Checkpoint after every epoch to this file (empty: none).
  std::string checkpoint_path;
  /// Continue from checkpoint_path when it exists (spec.epochs is then the total).
  bool resume = false;
  /// Also checkpoint inside an epoch (0: never): alone, every this many
  /// optimizer steps; across ranks, after every this many global batches of
  /// an epoch (parallel/sharded_training.h). The cursor is global, so such a checkpoint
  /// resumes on any rank count at the same sample.
  std::int64_t checkpoint_every_steps = 0;
  /// Called during fit, after the run's own (checkpoints, early stopping).
  std::vector<std::shared_ptr<model::Callback<float>>> callbacks;
  /// Time every op of the training steps (op::Profiler); the caller prints it.
  bool profile = false;
  /// Where a training step skipped by loss scaling is reported, one line
  /// each (null: nowhere; summary.json's "loss_scaling" lists them anyway).
  std::ostream* log = nullptr;
  /// The ranks to train on (null or one rank: this process alone, as
  /// before). With N > 1 ranks every rank calls run() with the same spec
  /// (share_config, across_ranks.h) and the strategy of spec.distributed
  /// averages them: batch_size is the global batch, each rank trains on its
  /// slice of it (data::shard_rows), the epoch metrics, validation and test
  /// scores are summed across ranks (every rank returns the same RunResult),
  /// and only rank 0 writes checkpoints (every rank reads checkpoint_path
  /// when resuming, so it must be on a file system all ranks see). Under a
  /// strategy whose server trains on no data (asgd; DataParallel) rank 0 is
  /// the parameter server: the other
  /// ranks share each global batch, and the model is the server's weights.
  /// Only rank 0 should be given callbacks that write or print.
  /// A network split over the ranks (a hybrid plan, built with this
  /// communicator) instead feeds every rank the whole global batch, scores
  /// validation and test on every rank alike, and takes only the allreduce
  /// strategy; its checkpoints are the one-process network's (every rank
  /// gathers the split weights, rank 0 writes) and resume on any rank count.
  std::shared_ptr<distributed::Communicator> communicator;
};

/// The test split scored after one epoch (spec.test_every_epoch).
struct EpochTest {
  unsigned int epoch = 0;  ///< 1-based
  double loss = 0.0;
  double accuracy = 0.0;
  bool operator==(const EpochTest&) const = default;
};

struct RunResult {
  model::History history;   ///< one record per epoch, the resumed ones included
  model::Evaluation test;   ///< the test split, scored once after training
  /// spec.test_every_epoch only: the epochs of this call (not the resumed ones).
  std::vector<EpochTest> test_curve;
  Json summary;             ///< summary.json's content
  double fit_seconds = 0;   ///< wall time of fit in this call
  /// A network split over the ranks (a hybrid plan): the predicted class of
  /// every test sample, computed by every rank together (a prediction is a
  /// collective there, so no rank may compute one alone). Empty otherwise.
  std::vector<std::int64_t> test_predictions;
};

/// Seconds of the training loops of all epochs of `h` (validation excluded).
double training_seconds(const model::History& h);

class TrainingRun {
 public:
  /// Loads the data and builds the network (see the file comment). `comm`:
  /// the ranks a hybrid plan (parallel_plan.h) splits its model-parallel
  /// layers over; every rank of it constructs the run at once, and passes
  /// the same communicator to run(). Null: the network is not split.
  explicit TrainingRun(const TrainSpec& spec, std::shared_ptr<distributed::Communicator> comm = nullptr);

  /// Trains and scores the test split.
  RunResult run(const RunOptions& options = {});

  const TrainSpec& spec() const noexcept { return spec_; }
  model::NeuralNetwork<float>& network() noexcept { return *build_.model; }
  const Split& train() const noexcept { return train_; }
  const Split& validation() const noexcept { return val_; }
  const Split& test() const noexcept { return test_; }
  /// Bytes the three splits hold: images at their source precision (uint8
  /// for MNIST-format files), labels in float.
  std::uint64_t dataset_bytes() const;
  /// One sample's shape, without the batch axis ({1, 28, 28} for MNIST).
  const std::vector<std::int64_t>& sample_shape() const noexcept { return build_.sample_shape; }
  std::int64_t classes() const noexcept { return build_.classes; }
  /// The test scores of the epochs run so far (spec.test_every_epoch; else
  /// empty). Up to date when run()'s callbacks see an epoch's end.
  const std::vector<EpochTest>& test_curve() const noexcept { return test_curve_; }

 private:
  // Scores (x, y): on one process net.evaluate, across ranks DataParallel's.
  using Scorer = std::function<model::Evaluation(const data::Samples<float>&, const Tensor<float>&)>;
  model::FitOptions<float> fit_options(const RunOptions& options, const Scorer& score);
  std::shared_ptr<optimizer::LossScaler> loss_scaler(std::ostream* log);
  Json summary(const RunResult& r, double wall_seconds) const;
  Json memory(std::uint64_t peak_rss, bool peak_is_training) const;
  Json loss_scaling(const optimizer::LossScaler& scaler) const;
  std::vector<InputRecord> inputs(const RunOptions& options) const;  // run_inputs.cpp
  RunResult run_pipelined(const RunOptions& options);                // pipeline_run.cpp

  TrainSpec spec_;
  Split train_, val_, test_;
  NetworkBuild build_;
  std::shared_ptr<distributed::Communicator> comm_;  // what the network was built over
  double load_seconds_ = 0;
  std::vector<EpochTest> test_curve_;
};

/// TrainingRun(spec).run(options).
RunResult run_training(const TrainSpec& spec, const RunOptions& options = {});

}  // namespace magmadnn::run
