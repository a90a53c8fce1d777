/// @file data_parallel.h
/// DataParallel: what a TrainingRun across ranks attaches to its network,
/// the strategy that spec.distributed names (distributed/strategy.h) built
/// on the run's communicator, and the timing split it reports.
///
/// Requires: every rank constructs it at the same point with the same spec
/// and an identically built network. Guarantees: after construction every
/// rank holds rank 0's initial weights (the strategy's attach broadcasts
/// them; nothing else does), and the network's gradient hooks are the
/// strategy's for as long as this object lives.
#pragma once

#include <chrono>
#include <memory>

#include "magmadnn/distributed/communicator.h"
#include "magmadnn/model/neural_network.h"
#include "magmadnn/run/spec.h"

namespace magmadnn::run {

class DataParallel {
 public:
  DataParallel(std::shared_ptr<distributed::Communicator> comm, const DistributedSpec& spec,
               model::NeuralNetwork<float>& net);
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;
  ~DataParallel();

  /// summary.json's "timing": compute, communication and overlapped seconds
  /// of the steps so far (overlapped: communication hidden behind compute).
  Json timing(double train_seconds) const;

 private:
  std::shared_ptr<distributed::Communicator> comm_;
  model::NeuralNetwork<float>& net_;
  // ---- ADAPTER (until distributed/strategy.h is on main): a blocking
  // average of every gradient in the gradient hook, nothing overlapped.
  double communication_seconds_ = 0;
};

}  // namespace magmadnn::run
