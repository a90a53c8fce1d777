/// @file data_parallel.h
/// DataParallel: what a TrainingRun across ranks attaches to its network:
/// the strategy that spec.distributed names (parallel/strategy.h), built on
/// the run's communicator, inside the training plugin that shares every
/// global batch among the ranks (parallel/sharded_training.h), and the
/// timing (and, for asgd, staleness) it reports.
///
/// Requires: every rank constructs it at the same point with the same spec
/// and an identically built network, and calls finish() once after
/// training; it outlives every fit of the network. Guarantees: after construction every
/// rank holds rank 0's initial weights (the strategy's attach broadcasts
/// them; nothing else does; of a network split by a hybrid plan, those the
/// exchange mask names); after epoch_end() and after finish() every rank
/// holds the model's weights and rank 0's layer state. Under a strategy
/// whose server trains on no data (asgd) rank 0 is the parameter server: it trains on no data (server_rank() is 0), the
/// other ranks share every global batch, and the model is the server's
/// weights, with the layer state (BatchNorm statistics) of rank 1, the first
/// worker.
#pragma once

#include <memory>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/parallel/sharded_training.h"
#include "magmadnn/parallel/strategy_registry.h"
#include "magmadnn/model/neural_network.h"
#include "magmadnn/run/spec.h"

namespace magmadnn::run {

class DataParallel {
 public:
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

  /// summary.json's "timing": the strategy's steps and compute,
  /// communication, overlapped (hidden behind the backward pass) and
  /// exposed seconds so far.
  Json timing() const;

  /// summary.json's "staleness" (a strategy that reports staleness, asgd;
  /// null otherwise): the bound, and
  /// the count, maximum and mean staleness of the gradients this rank
  /// applied (on the server: all of them) or sent (on a worker).
  Json staleness() const;

 private:
  std::shared_ptr<distributed::Communicator> comm_;
  model::NeuralNetwork<float>& net_;
  std::unique_ptr<distributed::Strategy<float>> strategy_;
  std::unique_ptr<distributed::ShardedTraining<float>> plugin_;
  distributed::StrategyTraits traits_;
  int server_rank_ = -1;
  std::int64_t staleness_bound_ = 0;
};

}  // namespace magmadnn::run
