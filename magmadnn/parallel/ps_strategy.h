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
///
/// phases(): the communication time of every step split into SHM-Learn-Dist
/// §6's three phases, summed over the steps, on this rank: gathering
/// (flattening the gradients and the gather, waits included), averaging
/// (the server's rank-order mean and its write-back; next to nothing on
/// the other ranks)
/// and broadcasting (reading the server's weights, the broadcast and
/// writing them back). The three add up to timing().comm_seconds.
#pragma once

#include "magmadnn/parallel/flat_params.h"
#include "magmadnn/parallel/strategy.h"

namespace magmadnn::distributed {

/// PsStrategy's communication time per phase, summed over `steps` steps.
struct PsPhaseTiming {
  std::int64_t steps = 0;
  double gathering_seconds = 0.0;
  double averaging_seconds = 0.0;
  double broadcasting_seconds = 0.0;
};

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
  /// The phases of every step so far (see the file comment).
  const PsPhaseTiming& phases() const noexcept { return phases_; }

 private:
  bool is_server() const { return this->comm_->rank() == this->options_.server_rank; }
  void on_finish();
  void on_update_done();
  detail::FlatParams<T> layout_;
  std::vector<Tensor<T>*> grads_;
  std::vector<T> flat_, gathered_;
  std::chrono::steady_clock::time_point step_mark_;
  StepTiming step_;
  PsPhaseTiming phases_;
};

}  // namespace magmadnn::distributed
