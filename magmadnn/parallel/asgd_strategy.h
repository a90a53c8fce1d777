/// @file asgd_strategy.h
/// AsgdStrategy<T> ("asgd"): asynchronous SGD against a parameter server
/// with bounded staleness (stale-synchronous parallel).
///
/// The server rank (StrategyOptions::server_rank, 0 by default) does not
/// train on data: it runs fit like every rank, but in each of its steps it
/// discards its own gradient and instead serves the workers until every
/// worker has completed as many steps as it has (the step's finish hook),
/// applying their gradients with its optimizer as they arrive. So its
/// epochs end with the workers' and collectives between steps (metrics
/// summed across ranks at an epoch's end) line up. Each worker, every step,
/// sends its gradient (with the version of the weights it was computed on)
/// and receives the server's current weights; there is no barrier between
/// workers and workers never run the optimizer themselves.
///
/// Versions and staleness: the version of the server's weights is the
/// global step, the number of steps every still-running worker has
/// completed. A gradient's staleness is the global step when the server
/// applies it minus the version it was computed on. With bound B
/// (StrategyOptions::staleness_bound) a worker that has completed c steps
/// receives its next weights only once the global step is at least c - B,
/// so no gradient is ever applied more than B steps stale; the server
/// records every gradient's staleness (staleness(): max and mean; a worker
/// sees those of its own gradients). With B = 0 every worker computes each
/// step on the same weights, which hold all gradients of the previous step:
/// synchronous training.
///
/// Each gradient is applied as it arrives, scaled by 1 / (number of
/// workers), so that a full round moves the weights as one step of
/// gradient averaging would with plain SGD. The server's optimizer counts
/// global steps, not gradients: each gradient is applied at the rate (and
/// step number) of the global step, so a schedule in epochs runs as in a
/// synchronous run, and a checkpoint's step count is the run's. With one
/// rank there is nobody to serve: the strategy then trains locally.
///
/// Requires: every rank takes the same number of steps, then calls
/// finalize() (workers tell the server they are done there; until then the
/// server keeps a receive posted for each). Guarantees: the reported
/// staleness never exceeds the bound; after finalize() every rank holds the
/// server's final weights; a worker that sends nothing for the
/// communicator's timeout while the server waits for it makes the server
/// throw CommError naming it (and a worker that takes more steps than the
/// server is named too). The server's share of the data is not trained on:
/// shard the data over the workers (ShardOptions::server_rank, parallel/sharded_training.h).
/// synchronize() (collective, between steps) gives every worker the
/// server's current weights and their version. The protocol uses point-to-point tags
/// 7200 to 7203 on the strategy's communicator.
#pragma once

#include <array>

#include "magmadnn/parallel/flat_params.h"
#include "magmadnn/parallel/strategy.h"

namespace magmadnn::distributed {

template <typename T>
class AsgdStrategy final : public Strategy<T> {
 public:
  AsgdStrategy(std::shared_ptr<Communicator> comm, StrategyOptions options) : Strategy<T>(std::move(comm), options) {}
  std::string name() const override { return "asgd"; }
  void attach(model::NeuralNetwork<T>& net) override;
  /// Alone (one rank) asgd is plain local training, timed: no gradients
  /// kept, the update fused into the backward pass.
  bool wants_gradients() const override { return this->comm_->size() > 1; }
  void backward_finished(const std::vector<Tensor<T>*>& grads) override;
  bool apply_update() override { return false; }
  void after_update() override;
  void finalize() override;
  void synchronize() override;
  StalenessStats staleness() const override;

 private:
  bool is_server() const { return this->comm_->rank() == this->options_.server_rank; }
  void start_serving();
  void serve_step();
  void work();
  // Server: receives and applies what has arrived, answers the workers the
  // bound lets go on; true when something happened.
  bool serve_once(bool finishing);
  void apply(const T* gradient, T scale);
  void count_staleness(std::int64_t s);
  std::int64_t global_step() const;
  [[noreturn]] void no_progress(const char* what, std::int64_t target) const;

  model::NeuralNetwork<T>* net_ = nullptr;
  detail::FlatParams<T> layout_;
  std::vector<op::Expr<T>> exprs_;
  op::GradTable<T> table_;  // server: the gradient being applied
  std::vector<Tensor<T>*> grads_;
  std::vector<T> flat_, incoming_;
  std::int64_t version_ = 0;  // worker: version of the weights it holds
  bool finalized_ = false;
  std::int64_t staleness_count_ = 0, staleness_max_ = 0;
  double staleness_sum_ = 0.0;
  std::chrono::steady_clock::time_point step_mark_;
  // Server: per rank (the server's own entries unused), kept across steps.
  std::int64_t server_steps_ = 0;
  std::int64_t step_base_ = 0;                // the optimizer's step count when serving began
  std::vector<std::int64_t> clock_;           // steps pushed; finished: the largest int64
  std::vector<std::int64_t> last_staleness_;  // of the gradient awaiting its reply
  std::vector<bool> waiting_;                 // pushed, reply not yet sent
  std::vector<std::array<std::int64_t, 2>> header_;
  std::vector<RequestPtr> pending_;           // posted receive of the next header
};

}  // namespace magmadnn::distributed
