/// @file data_parallel.h
/// DataParallel: what a TrainingRun across ranks attaches to its network,
/// the strategy that spec.distributed names (distributed/strategy.h) built
/// on the run's communicator, and the timing split it reports.
///
/// Requires: every rank constructs it at the same point with the same spec
/// and an identically built network, and calls finish() once after
/// training. Guarantees: after construction every rank holds rank 0's
/// initial weights (the strategy's attach broadcasts them; nothing else
/// does); after finish() every rank holds the same weights; "asgd" is
/// refused with NotSupportedError (its server rank trains on no data, which
/// the run's sampler does not account for).
#pragma once

#include <memory>

#include "magmadnn/distributed/communicator.h"
#include "magmadnn/distributed/strategy.h"
#include "magmadnn/model/neural_network.h"
#include "magmadnn/run/spec.h"

namespace magmadnn::run {

/// NotSupportedError when `spec` names a strategy a training run cannot use
/// (today "asgd"); call it before anything is written.
void check_run_strategy(const DistributedSpec& spec);

class DataParallel {
 public:
  DataParallel(std::shared_ptr<distributed::Communicator> comm, const DistributedSpec& spec,
               model::NeuralNetwork<float>& net);
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;
  ~DataParallel();

  /// Collective, once after training: every rank ends with the same weights.
  void finish();

  /// summary.json's "timing": the strategy's steps and compute,
  /// communication, overlapped (hidden behind the backward pass) and
  /// exposed seconds so far.
  Json timing() const;

 private:
  std::shared_ptr<distributed::Communicator> comm_;
  model::NeuralNetwork<float>& net_;
  std::unique_ptr<distributed::Strategy<float>> strategy_;
};

}  // namespace magmadnn::run
