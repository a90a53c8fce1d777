#include "magmadnn/run/data_parallel.h"


namespace magmadnn::run {

DataParallel::DataParallel(std::shared_ptr<distributed::Communicator> comm, const DistributedSpec& spec,
                           model::NeuralNetwork<float>& net, const std::vector<bool>& exchange)
    : comm_(std::move(comm)), net_(net) {
  MAGMADNN_CHECK(comm_ != nullptr, ValueError, "DataParallel: no communicator");
  distributed::StrategyOptions o;
  o.bucket_bytes = static_cast<std::size_t>(spec.bucket_mb * 1024.0 * 1024.0);
  o.average_every = static_cast<int>(spec.average_every);
  o.staleness_bound = static_cast<int>(spec.staleness);
  o.server_rank = 0;  // ps and asgd: rank 0 holds the weights, as it writes the checkpoints
  o.exchange = exchange;
  o.sum_gradients = !exchange.empty();
  strategy_ = distributed::make_strategy<float>(spec.strategy, comm_, o);
  traits_ = distributed::strategy_entry(spec.strategy).traits;
  server_rank_ = server_rank_for(spec, comm_->size());
  staleness_bound_ = spec.staleness;
  plugin_ = std::make_unique<distributed::ShardedTraining<float>>(
      comm_, *strategy_, distributed::ShardOptions{server_rank_, !exchange.empty()});
  plugin_->attach(net_);  // rank 0's initial weights to every rank
}

DataParallel::~DataParallel() = default;

int DataParallel::server_rank_for(const DistributedSpec& spec, int ranks) {
  return ranks > 1 && distributed::strategy_entry(spec.strategy).traits.server_trains_no_data ? 0 : -1;
}

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

Json DataParallel::staleness() const {
  if (!traits_.reports_staleness) return Json();
  const distributed::StalenessStats s = strategy_->staleness();
  Json j;
  j["bound"] = staleness_bound_;
  j["gradients"] = s.gradients;
  j["max"] = s.max;
  j["mean"] = s.mean;
  return j;
}

}  // namespace magmadnn::run
