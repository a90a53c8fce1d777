#include "magmadnn/run/data_parallel.h"

namespace magmadnn::run {

void check_run_strategy(const DistributedSpec& spec) {
  MAGMADNN_CHECK(spec.strategy != "asgd", NotSupportedError,
                 "strategy \"asgd\" is not available to a training run yet: its server rank trains on no data, and "
                 "the run's sampler gives every rank a slice; use allreduce, ring, ps or weight-avg");
}

DataParallel::DataParallel(std::shared_ptr<distributed::Communicator> comm, const DistributedSpec& spec,
                           model::NeuralNetwork<float>& net)
    : comm_(std::move(comm)), net_(net) {
  MAGMADNN_CHECK(comm_ != nullptr, ValueError, "DataParallel: no communicator");
  check_run_strategy(spec);
  distributed::StrategyOptions o;
  o.bucket_bytes = static_cast<std::size_t>(spec.bucket_mb * 1024.0 * 1024.0);
  o.average_every = static_cast<int>(spec.average_every);
  o.staleness_bound = static_cast<int>(spec.staleness);
  strategy_ = distributed::make_strategy<float>(spec.strategy, comm_, o);
  strategy_->attach(net_);  // rank 0's initial weights to every rank
}

DataParallel::~DataParallel() = default;

void DataParallel::finish() { strategy_->finalize(); }

Json DataParallel::timing() const {
  const distributed::StepTiming& t = strategy_->timing();
  Json j;
  j["steps"] = t.steps;
  j["compute_seconds"] = t.compute_seconds;
  j["communication_seconds"] = t.comm_seconds;
  j["overlapped_seconds"] = t.overlapped_seconds;
  j["exposed_seconds"] = t.exposed_seconds();
  return j;
}

}  // namespace magmadnn::run
