#include "magmadnn/run/data_parallel.h"

#include <chrono>

#include "magmadnn/run/across_ranks.h"

namespace magmadnn::run {

void check_run_strategy(const DistributedSpec& spec) {
  MAGMADNN_CHECK(spec.strategy != "asgd", NotSupportedError,
                 "strategy \"asgd\" is not available to a training run yet: its server rank trains on no data, and "
                 "the run's sampler gives every rank a slice; use allreduce, ring, ps or weight-avg");
}

#if MAGMADNN_RUN_HAS_STRATEGIES

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

Json DataParallel::timing(double) const {
  const distributed::StepTiming& t = strategy_->timing();
  Json j;
  j["steps"] = t.steps;
  j["compute_seconds"] = t.compute_seconds;
  j["communication_seconds"] = t.comm_seconds;
  j["overlapped_seconds"] = t.overlapped_seconds;
  j["exposed_seconds"] = t.exposed_seconds();
  return j;
}

#else  // ---- INTERIM ADAPTER (see data_parallel.h)

DataParallel::DataParallel(std::shared_ptr<distributed::Communicator> comm, const DistributedSpec& spec,
                           model::NeuralNetwork<float>& net)
    : comm_(std::move(comm)), net_(net) {
  MAGMADNN_CHECK(comm_ != nullptr, ValueError, "DataParallel: no communicator");
  check_run_strategy(spec);
  MAGMADNN_CHECK(spec.strategy == "allreduce", NotSupportedError,
                 "magmadnn train: strategy \"" << spec.strategy
                                               << "\" needs distributed/strategy.h, which this build lacks");
  broadcast_weights(*comm_, net_);
  net_.set_gradient_hook([this](const std::vector<op::Var<float>>&, std::vector<Tensor<float>*>& grads) {
    const auto t0 = std::chrono::steady_clock::now();
    comm_->set_step(net_.optimizer().step_count());  // quoted by the watchdog
    std::vector<distributed::RequestPtr> pending;
    for (Tensor<float>* g : grads) {
      pending.push_back(comm_->iallreduce(
          distributed::host_buffer(g->mutable_host_data(), static_cast<std::size_t>(g->size())),
          distributed::ReduceOp::avg));
    }
    distributed::wait_all(pending);
    communication_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++steps_;
  });
}

DataParallel::~DataParallel() { net_.set_gradient_hook({}); }

void DataParallel::finish() {}

Json DataParallel::timing(double train_seconds) const {
  Json j;
  j["steps"] = steps_;
  j["compute_seconds"] = train_seconds - communication_seconds_;
  j["communication_seconds"] = communication_seconds_;
  j["overlapped_seconds"] = 0.0;
  j["exposed_seconds"] = communication_seconds_;
  return j;
}

#endif

}  // namespace magmadnn::run
