/// @file data_parallel.h
/// DataParallel: everything a TrainingRun does because it runs on more than
/// one rank. start() refuses a run the ranks cannot train together, checks
/// that every rank read the same inputs, and attaches to the network the
/// strategy that spec.distributed names (parallel/strategy.h), built on the
/// run's communicator, inside the training plugin that shares every global
/// batch among the ranks (parallel/sharded_training.h); the run then asks it
/// to score, to tell the other ranks of a failure, and to describe itself in
/// summary.json (timing and, for asgd, staleness). run_training.cpp holds no
/// rank logic of its own.
///
/// Requires: every rank calls start() at the same point with the same spec
/// and an identically built network, and, when it returns a DataParallel,
/// calls finish() once after training; it outlives every fit of the network.
/// Guarantees: after construction every rank holds rank 0's initial weights
/// (the strategy's attach broadcasts them; nothing else does; of a network
/// split by a hybrid plan, those the exchange mask names); after epoch_end()
/// and after finish() every rank holds the model's weights and rank 0's
/// layer state. Under a strategy whose server trains on no data (asgd) rank
/// 0 is the parameter server: it trains on no data (server_rank() is 0), the
/// other ranks share every global batch, and the model is the server's
/// weights, with the layer state (BatchNorm statistics) of rank 1, the first
/// worker.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/model/neural_network.h"
#include "magmadnn/parallel/sharded_training.h"
#include "magmadnn/parallel/strategy_registry.h"
#include "magmadnn/run/across_ranks.h"
#include "magmadnn/run/build_network.h"
#include "magmadnn/run/spec.h"

namespace magmadnn::run {

/// What start() needs to know of a run.
struct RankedRun {
  /// The ranks run() was given (null or one rank: no DataParallel).
  std::shared_ptr<distributed::Communicator> comm;
  /// The ranks the network was built over (TrainingRun's constructor); a
  /// split network (build.split) must be run on the same communicator.
  std::shared_ptr<distributed::Communicator> built_over;
  const TrainSpec* spec = nullptr;
  const NetworkBuild* build = nullptr;
  /// Rows of the training, validation and test splits (a split network cuts
  /// every batch of each into one shard per rank).
  std::int64_t train_rows = 0, validation_rows = 0, test_rows = 0;
};

class DataParallel {
 public:
  /// Collective. Refuses, on every rank alike and before any collective, a
  /// run the ranks cannot train together (ConfigError naming the key: a
  /// global batch smaller than the ranks that train, loss scaling under a
  /// strategy that does not sum every step, a split network's batch smaller
  /// than its ranks; ValueError: a split network run on another
  /// communicator, a hybrid plan built without one). Then sets the
  /// watchdog (spec.distributed.watchdog_s), checks that every rank read
  /// what rank 0 read (check_same_inputs over `inputs()`, called only on
  /// more than one rank), and attaches. Returns null on one rank.
  static std::unique_ptr<DataParallel> start(const RankedRun& run,
                                             const std::function<std::vector<InputRecord>()>& inputs);

  /// `exchange`: a network split by a hybrid plan (NetworkBuild::exchange):
  /// only those parameters are exchanged, and their gradients summed
  /// (StrategyOptions::exchange, sum_gradients). Empty: plain data parallelism.
  DataParallel(std::shared_ptr<distributed::Communicator> comm, const DistributedSpec& spec,
               model::NeuralNetwork<float>& net, const std::vector<bool>& exchange = {});
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;
  ~DataParallel();

  /// The rank that trains on no data (ShardOptions::server_rank): 0
  /// on more than one rank under a strategy whose server trains on no data
  /// (StrategyTraits::server_trains_no_data: asgd), else -1.
  static int server_rank_for(const DistributedSpec& spec, int ranks);
  int server_rank() const noexcept { return server_rank_; }

  /// Collective, once after training: every rank ends with the same weights.
  void finish();

  /// Collective: loss and accuracy over (x, y), the same on every rank. A
  /// replicated network scores its slice on each rank (evaluate_across); a
  /// split one scores the whole set on every rank alike.
  model::Evaluation evaluate(const data::Samples<float>& x, const Tensor<float>& y);

  /// A network split over the ranks: the predicted class of every row of
  /// `x`, computed by every rank together (a prediction is a collective
  /// there, so no rank may compute one alone). Empty for a replicated one.
  std::vector<std::int64_t> split_predictions(const data::Samples<float>& x);

  /// Tells the other ranks, waiting for this one in a collective, why it
  /// stopped (Communicator::report_failure), so they fail at once instead of
  /// when their watchdogs fire.
  void report_failure(const std::string& what) noexcept;

  /// Adds to summary.json: "ranks", "strategy", "timing" (the strategy's
  /// steps and compute, communication, overlapped and exposed seconds) and,
  /// for a strategy that reports staleness (asgd), "staleness" (the bound,
  /// and the count, maximum and mean staleness of the gradients this rank
  /// applied, on the server, or sent, on a worker).
  void describe(Json& summary) const;

 private:
  Json timing() const;
  Json staleness() const;

  std::shared_ptr<distributed::Communicator> comm_;
  model::NeuralNetwork<float>& net_;
  std::unique_ptr<distributed::Strategy<float>> strategy_;
  std::unique_ptr<distributed::ShardedTraining<float>> plugin_;
  distributed::StrategyTraits traits_;
  std::string strategy_name_;
  std::string allreduce_;  // how the strategy's allreduces travel, for the summary
  int server_rank_ = -1;
  std::int64_t staleness_bound_ = 0;
  bool split_ = false;
};

}  // namespace magmadnn::run
