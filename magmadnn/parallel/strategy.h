/// @file strategy.h
/// distributed::Strategy<T>: how the ranks of a data-parallel run keep one
/// model. A strategy is the network's training plugin
/// (model/training_plugin.h): attached to a model::NeuralNetwork<T>, it
/// makes every training step of that network exchange gradients or weights
/// with the other ranks through a Communicator. Each rank trains on the data
/// it is given; parallel/sharded_training.h adds the sharing of each global
/// batch among the ranks.
///
///   std::shared_ptr<distributed::Communicator> comm = distributed::make_communicator("auto");
///   auto s = distributed::make_strategy<float>(name, comm, {});  // strategy_names()
///   s->attach(net);          // collective: rank 0's weights go to every rank
///   net.fit(x_shard, y_shard, opts);
///   s->finalize();           // collective: every rank ends with the same weights
///   s->timing();             // compute / communication / overlapped seconds
///
/// The strategies (docs/distributed.md, "Strategies"; docs/notes/data-parallel.md)
/// are the entries of the registry (strategy_registry.h): each strategy's
/// .cpp registers its name, help, traits and factory; `magmadnn train
/// --help` lists them.
///
/// Requires: every rank attaches the same kind of strategy, with the same
/// options, to a network of the same architecture, and runs the same number
/// of steps (a distributed sampler gives equal step counts); the network
/// is not moved while attached, and the strategy outlives every fit of the
/// network (the network points to it); one strategy per network. Guarantees: after attach()
/// every rank holds rank 0's parameters, layer state (BatchNorm statistics)
/// and optimizer step count; after finalize() every rank holds the same
/// parameters; errors of the exchange surface as CommError from the training
/// step (never a silent hang: the communicator's watchdog bounds every wait).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/model/neural_network.h"

namespace magmadnn::distributed {

/// What the strategies can be told. Every rank must pass the same values.
struct StrategyOptions {
  /// allreduce: bytes of gradients per bucket (25 MiB, as PyTorch DDP). A
  /// parameter larger than this gets a bucket of its own.
  std::size_t bucket_bytes = std::size_t{25} << 20;
  /// allreduce: the first bucket (the last layers' gradients) closes at
  /// min(first_bucket_bytes, bucket_bytes), 1 MiB as in PyTorch DDP, so that
  /// a model smaller than bucket_bytes still starts communicating while its
  /// backward pass runs.
  std::size_t first_bucket_bytes = std::size_t{1} << 20;
  /// allreduce: a parameter of at least this many bytes gets a bucket of
  /// its own, reduced where the backward pass left its gradient (no copy in
  /// or out, PyTorch DDP's gradient_as_bucket_view); smaller ones are packed
  /// into shared buckets, so that a layer's bias costs no collective of its
  /// own. 256 KiB: above it a collective's fixed cost is under 5% of its
  /// transfer on shared memory (docs/notes/distributed-measurements.md, "Performance").
  std::size_t in_place_bytes = std::size_t{256} << 10;
  /// weight-avg: average the weights every k steps (k >= 1).
  int average_every = 1;
  /// asgd: the most global steps a gradient may be behind the weights it is
  /// applied to (>= 0); a worker that would exceed it waits.
  int staleness_bound = 4;
  /// ps and asgd: the rank that holds the authoritative weights.
  int server_rank = 0;
  /// allreduce: keep the per-step event timeline (timeline()).
  bool record_timeline = false;
  /// allreduce: how long the communication thread sleeps between polls of
  /// in-flight requests when nothing else wakes it.
  std::chrono::microseconds poll_interval{100};
  /// A hybrid plan (run/parallel_plan.h): which of net.parameters() the
  /// strategy exchanges and starts equal, by index; empty: all of them. The
  /// others are slices of model-parallel weights (different on every rank)
  /// or replicated weights computed on the whole batch on every rank (their
  /// gradients already equal and whole): neither may be averaged. Only
  /// allreduce serves a mask (make_strategy refuses it for the others).
  std::vector<bool> exchange;
  /// allreduce: the ranks' gradients are parts of one gradient and are
  /// summed (a hybrid plan: the loss is the whole global batch's on every
  /// rank), instead of each rank's own mean, averaged. Only allreduce.
  bool sum_gradients = false;
};

/// Wall-clock time of training steps as a strategy sees them.
struct StepTiming {
  std::int64_t steps = 0;
  /// Time the step spent outside the strategy's waits: forward, backward,
  /// the optimizer step, data feeding.
  double compute_seconds = 0.0;
  /// Time with communication in flight (launch of the first exchange to
  /// completion of the last; blocking exchanges count whole).
  double comm_seconds = 0.0;
  /// The part of comm_seconds that ran while the backward pass was still
  /// computing (hidden behind it).
  double overlapped_seconds = 0.0;
  /// The part of comm_seconds the step waited for.
  double exposed_seconds() const noexcept { return comm_seconds - overlapped_seconds; }
  StepTiming& operator+=(const StepTiming& o) noexcept {
    steps += o.steps;
    compute_seconds += o.compute_seconds;
    comm_seconds += o.comm_seconds;
    overlapped_seconds += o.overlapped_seconds;
    return *this;
  }
};

/// asgd: how far behind the gradients were when the server applied them.
struct StalenessStats {
  std::int64_t gradients = 0;  ///< gradients applied
  std::int64_t max = 0;
  double mean = 0.0;
};

/// allreduce with record_timeline: what happened when in a step (seconds
/// since attach). `index` is the parameter for `ready`, the bucket for
/// `launch` / `complete`, -1 otherwise.
struct TimelineEvent {
  enum class Kind { ready, launch, complete, backward_end, step_end };
  Kind kind;
  int index;
  double seconds;
};
const char* timeline_kind_name(TimelineEvent::Kind k) noexcept;

template <typename T>
class Strategy : public model::TrainingPlugin<T> {
 public:
  ~Strategy() override = default;
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  /// Its registry name (strategy_registry.h).
  virtual std::string name() const = 0;
  /// Collective. Makes every rank start from rank 0's state and installs
  /// the strategy as `net`'s training plugin (replacing any other).
  void attach(model::NeuralNetwork<T>& net) override = 0;
  /// All of the rows, with the factor the strategy's exchange needs on its
  /// gradients (e.g. 1 / ranks where it sums them).
  typename model::TrainingPlugin<T>::Part part(std::int64_t rows) const override {
    return {0, rows, true, gradient_scale_};
  }
  /// Collective, once after training: every rank ends with the same
  /// parameters (asgd: the server's; weight-avg: the average). Needed by
  /// asgd (workers tell the server they are done); harmless for the others.
  virtual void finalize() {}
  /// Collective, between steps: every rank takes the authoritative weights
  /// where the strategy lets the ranks hold others (asgd: the server's, with
  /// their version), e.g. before an evaluation. The other strategies do
  /// nothing (weight-avg keeps its own averaging schedule).
  virtual void synchronize() {}

  /// Totals over every step since attach, and the last step alone.
  const StepTiming& timing() const noexcept { return total_; }
  const StepTiming& last_step() const noexcept { return last_; }
  /// asgd: the staleness of the gradients applied (on the server; a worker
  /// sees those of its own gradients). Zeros for the other strategies.
  virtual StalenessStats staleness() const { return {}; }
  /// allreduce with record_timeline: the events of the last step.
  const std::vector<TimelineEvent>& timeline() const noexcept { return timeline_; }
  Communicator& communicator() const noexcept { return *comm_; }
  const StrategyOptions& options() const noexcept { return options_; }

 protected:
  Strategy(std::shared_ptr<Communicator> comm, StrategyOptions options);
  /// Rank 0's parameters (those options().exchange names), layer state and
  /// optimizer step count to every rank.
  void broadcast_initial_state(model::NeuralNetwork<T>& net);
  /// The parameters options().exchange names (all without a mask), in order.
  std::vector<op::Var<T>> exchanged_parameters(const model::NeuralNetwork<T>& net) const;
  void record_step(const StepTiming& step) noexcept {
    last_ = step;
    total_ += step;
  }

  std::shared_ptr<Communicator> comm_;
  StrategyOptions options_;
  std::vector<TimelineEvent> timeline_;
  double gradient_scale_ = 1.0;  // part()'s

 private:
  StepTiming total_, last_;
};

/// The names make_strategy accepts (strategy_registry.h), by the
/// registry's order: the default first.
std::vector<std::string> strategy_names();

/// A strategy by name (strategy_names()), built by its registry entry. ValueError naming the choices for
/// an unknown name or an option out of range (average_every < 1, a negative
/// staleness bound, a server rank outside [0, size), a bucket size of 0), or
/// for an exchange mask or sum_gradients given to a strategy other than allreduce.
template <typename T>
std::unique_ptr<Strategy<T>> make_strategy(const std::string& name, std::shared_ptr<Communicator> comm,
                                           const StrategyOptions& options = {});

}  // namespace magmadnn::distributed
