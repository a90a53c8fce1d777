/// @file ps_strategy.h
/// PsStrategy<T> ("ps", parameter server; SHM-Learn-Dist §6, the MagmaDNN
/// paper §4): every rank computes gradients on its data; the server rank
/// (StrategyOptions::server_rank, 0 by default) gathers them, averages them
/// in rank order, runs the optimizer step and broadcasts the new weights.
/// The other ranks never run the optimizer (their optimizer state stays
/// empty and their step count stays at attach's).
///
/// Requires: equal step counts on every rank. Guarantees: after every step
/// all ranks hold the server's weights, bit for bit; the average is summed
/// in rank order, so a run is bit-identical to a rerun on the same rank
/// count. The exchange starts after the backward pass (no overlap) and moves
/// the gradients and weights through one rank: choose "allreduce" for speed,
/// "ps" for an optimizer whose state must live in one place.
#pragma once

#include "magmadnn/parallel/flat_params.h"
#include "magmadnn/parallel/strategy.h"

namespace magmadnn::distributed {

template <typename T>
class PsStrategy final : public Strategy<T> {
 public:
  PsStrategy(std::shared_ptr<Communicator> comm, StrategyOptions options) : Strategy<T>(std::move(comm), options) {}
  std::string name() const override { return "ps"; }
  void attach(model::NeuralNetwork<T>& net) override;
  bool wants_gradients() const override { return true; }
  void backward_finished(const std::vector<Tensor<T>*>& grads) override {
    grads_ = grads;
    on_finish();
  }
  bool apply_update() override { return is_server(); }
  void after_update() override { on_update_done(); }

 private:
  bool is_server() const { return this->comm_->rank() == this->options_.server_rank; }
  void on_finish();
  void on_update_done();
  detail::FlatParams<T> layout_;
  std::vector<Tensor<T>*> grads_;
  std::vector<T> flat_, gathered_;
  std::chrono::steady_clock::time_point step_mark_;
  StepTiming step_;
};

}  // namespace magmadnn::distributed
