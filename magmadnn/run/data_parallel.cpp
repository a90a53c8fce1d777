#include "magmadnn/run/data_parallel.h"

#include <chrono>
#include <sstream>

#include "magmadnn/comm/hierarchical_communicator.h"
#include "magmadnn/core/registry.h"
#include "magmadnn/parallel/ps_strategy.h"

namespace magmadnn::run {
namespace {

// Loss scaling across ranks: the skip decision is taken on gradients
// already summed across ranks only under the strategies that sum them every
// step (so every rank skips the same steps).
void check_loss_scaling_strategy(const std::string& strategy) {
  if (distributed::strategy_entry(strategy).traits.same_gradients_every_step) return;
  const std::vector<std::string> serving =
      distributed::strategy_names_where([](const distributed::StrategyTraits& t) { return t.same_gradients_every_step; });
  throw ConfigError("loss_scaling", "loss scaling across ranks needs the " + names_text(serving) +
                                        " strategy (every rank must skip the same steps), not " + strategy);
}

// The user's mistake, found on every rank alike: a config error (no
// file:line; exit status 2).
void check_trainers(const TrainSpec& spec, int ranks) {
  const int trainers = ranks - (DataParallel::server_rank_for(spec.distributed, ranks) >= 0 ? 1 : 0);
  if (spec.batch_size >= trainers) return;
  throw ConfigError("batch_size", std::to_string(spec.batch_size) + " is the global batch and must give each of the " +
                                      std::to_string(trainers) + " ranks that train at least one row (use a batch "
                                      "of at least " + std::to_string(trainers) + ", or fewer ranks)");
}

// What a network split over the ranks cannot do yet, refused before training.
void check_split_run(const RankedRun& run) {
  const TrainSpec& spec = *run.spec;
  MAGMADNN_CHECK(run.comm == run.built_over, ValueError,
                 "TrainingRun: the network is split over the communicator it was built with; run() must be given "
                 "the same one");
  const int p = run.built_over->size();
  if (loss_scaling_enabled(spec.loss_scaling, spec.precision))
    throw ConfigError("loss_scaling", "loss scaling with model-parallel layers is not supported (each rank would "
                                      "check only its slices of the split gradients, and the ranks could skip "
                                      "different steps)");
  // Every batch is cut into one shard per rank (the last one included).
  const auto check_rows = [&](std::int64_t n, const char* what) {
    const std::int64_t rest = n % spec.batch_size;
    if (spec.batch_size >= p && (rest == 0 || rest >= p)) return;
    std::ostringstream os;
    os << "with model-parallel layers every batch is split over the " << p << " ranks, one row each at least, but ";
    if (spec.batch_size < p) {
      os << "the batch is " << spec.batch_size;
    } else {
      os << "the " << what << " set of " << n << " samples in batches of " << spec.batch_size
         << " ends with a batch of " << rest;
    }
    os << " (choose batch_size or data limits so that no batch is smaller than " << p << ")";
    throw ConfigError("batch_size", os.str());
  };
  check_rows(run.train_rows, "training");
  check_rows(run.validation_rows, "validation");
  check_rows(run.test_rows, "test");
}

}  // namespace

std::unique_ptr<DataParallel> DataParallel::start(const RankedRun& run,
                                                  const std::function<std::vector<InputRecord>()>& inputs) {
  const TrainSpec& spec = *run.spec;
  const NetworkBuild& build = *run.build;
  if (build.split) check_split_run(run);
  const int ranks = run.comm ? run.comm->size() : 1;
  MAGMADNN_CHECK(ranks == 1 || build.split || !build.plan.hybrid(), ValueError,
                 "TrainingRun: the config has model-parallel layers, but the network was built without the "
                 "communicator: pass it to TrainingRun's constructor as well as to run()");
  if (ranks == 1) return nullptr;
  if (loss_scaling_enabled(spec.loss_scaling, spec.precision)) check_loss_scaling_strategy(spec.distributed.strategy);
  check_trainers(spec, ranks);
  run.comm->set_timeout(std::chrono::milliseconds(static_cast<std::int64_t>(spec.distributed.watchdog_s * 1000.0)));
  // Before any collective of training: every rank must have read what rank
  // 0 read (the slices are cut from each rank's own copy of the data, and
  // every rank resumes from its own copy of the checkpoint), else a rank
  // would train on other rows, score another test set, or start from
  // another step without a word.
  check_same_inputs(*run.comm, inputs());
  // Rank 0's initial weights (of a split network: its replicated ones).
  return std::make_unique<DataParallel>(run.comm, spec.distributed, *build.model, build.exchange);
}

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
  // The strategy alone sees the hierarchical decorator; everything else
  // (sharding, evaluation, checks) keeps the flat communicator.
  std::shared_ptr<distributed::Communicator> exchange_comm = distributed::allreduce_communicator(comm_, spec.allreduce);
  if (const auto* h = dynamic_cast<const distributed::HierarchicalCommunicator*>(exchange_comm.get())) {
    allreduce_ = "hierarchical: " + h->layout().describe();
  } else {
    allreduce_ = "flat";
  }
  strategy_ = distributed::make_strategy<float>(spec.strategy, exchange_comm, o);
  traits_ = distributed::strategy_entry(spec.strategy).traits;
  strategy_name_ = spec.strategy;
  server_rank_ = server_rank_for(spec, comm_->size());
  staleness_bound_ = spec.staleness;
  split_ = !exchange.empty();
  plugin_ = std::make_unique<distributed::ShardedTraining<float>>(
      comm_, *strategy_, distributed::ShardOptions{server_rank_, split_});
  plugin_->attach(net_);  // rank 0's initial weights to every rank
}

DataParallel::~DataParallel() = default;

int DataParallel::server_rank_for(const DistributedSpec& spec, int ranks) {
  return ranks > 1 && distributed::strategy_entry(spec.strategy).traits.server_trains_no_data ? 0 : -1;
}

void DataParallel::finish() { strategy_->finalize(); }

model::Evaluation DataParallel::evaluate(const data::Samples<float>& x, const Tensor<float>& y) {
  return split_ ? net_.evaluate(x, y) : evaluate_across(*comm_, net_, x, y);
}

std::vector<std::int64_t> DataParallel::split_predictions(const data::Samples<float>& x) {
  return split_ ? net_.predict_classes(x) : std::vector<std::int64_t>{};
}

void DataParallel::report_failure(const std::string& what) noexcept { comm_->report_failure(what); }

void DataParallel::describe(Json& summary) const {
  summary["ranks"] = comm_->size();
  summary["strategy"] = strategy_name_;
  summary["allreduce"] = allreduce_;
  summary["timing"] = timing();
  if (const Json st = staleness(); !st.is_null()) summary["staleness"] = st;
}

Json DataParallel::timing() const {
  const distributed::StepTiming& t = strategy_->timing();
  Json j;
  j["steps"] = t.steps;
  j["compute_seconds"] = t.compute_seconds;
  j["communication_seconds"] = t.comm_seconds;
  j["overlapped_seconds"] = t.overlapped_seconds;
  j["exposed_seconds"] = t.exposed_seconds();
  // The parameter server's phases (SHM-Learn-Dist §6), as this rank saw them.
  if (const auto* ps = dynamic_cast<const distributed::PsStrategy<float>*>(strategy_.get())) {
    const distributed::PsPhaseTiming& p = ps->phases();
    Json phases;
    phases["steps"] = p.steps;
    phases["gathering_seconds"] = p.gathering_seconds;
    phases["averaging_seconds"] = p.averaging_seconds;
    phases["broadcasting_seconds"] = p.broadcasting_seconds;
    j["ps_phases"] = phases;
  }
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
