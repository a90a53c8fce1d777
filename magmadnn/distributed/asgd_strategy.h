/// @file asgd_strategy.h
/// AsgdStrategy<T> ("asgd"): asynchronous SGD against a parameter server
/// with bounded staleness (stale-synchronous parallel).
///
/// The server rank (StrategyOptions::server_rank, 0 by default) does not
/// train on data: inside its first training step it serves the other ranks
/// until every one of them has called finalize(), applying their gradients
/// with its optimizer, then stops its fit. Each worker, every step, sends
/// its gradient (with the version of the weights it was computed on) and
/// receives the server's current weights; there is no barrier between
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
/// gradient averaging would with plain SGD; the server's optimizer counts
/// one step per gradient. With one rank there is nobody to serve: the
/// strategy then trains locally.
///
/// Requires: every rank calls fit (the server's returns after serving) and
/// then finalize(); one fit per attach. Guarantees: the reported staleness
/// never exceeds the bound; after finalize() every rank holds the server's
/// final weights. Only workers' data is trained on, so shard the data over
/// the workers.
#pragma once

#include "magmadnn/distributed/flat_params.h"
#include "magmadnn/distributed/strategy.h"

namespace magmadnn::distributed {

template <typename T>
class AsgdStrategy final : public Strategy<T> {
 public:
  AsgdStrategy(std::shared_ptr<Communicator> comm, StrategyOptions options) : Strategy<T>(std::move(comm), options) {}
  std::string name() const override { return "asgd"; }
  void attach(model::NeuralNetwork<T>& net) override;
  void finalize() override;
  StalenessStats staleness() const override;

 private:
  bool is_server() const { return this->comm_->rank() == this->options_.server_rank; }
  void serve();
  void work();
  void apply(const T* gradient, T scale);
  void count_staleness(std::int64_t s);

  model::NeuralNetwork<T>* net_ = nullptr;
  detail::FlatParams<T> layout_;
  std::vector<op::Expr<T>> exprs_;
  op::GradTable<T> table_;  // server: the gradient being applied
  std::vector<Tensor<T>*> grads_;
  std::vector<T> flat_;
  std::int64_t version_ = 0;  // worker: version of the weights it holds
  bool served_ = false, finalized_ = false;
  std::int64_t staleness_count_ = 0, staleness_max_ = 0;
  double staleness_sum_ = 0.0;
  std::chrono::steady_clock::time_point step_mark_;
};

}  // namespace magmadnn::distributed
