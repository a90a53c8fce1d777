/// @file ring_strategy.h
/// RingStrategy<T> ("ring"): gradients averaged over all ranks by our own
/// ring allreduce over point-to-point messages (ring_allreduce_mean), the
/// deterministic mode and the test oracle of the other strategies.
///
/// ring_allreduce_mean: the buffer is cut into size() chunks; a
/// reduce-scatter of size() - 1 steps passes each chunk around the ring,
/// every rank adding its own values to what it receives, so chunk c is
/// summed in the fixed order x_c + x_{c+1} + ... + x_{c-1} (ranks modulo
/// size()); its owner divides it by size(); an allgather of size() - 1
/// steps then copies every finished chunk to every rank.
///
/// Requires: every rank calls it with the same count, in the same order
/// relative to other point-to-point traffic on `tag`. Guarantees: for a
/// given rank count the result is bit-identical run to run, whatever the
/// timing or the MPI library; every rank receives the same bytes, so the
/// ranks' weights stay bit-identical. The strategy exchanges after the
/// backward pass (no overlap): use "allreduce" for speed.
#pragma once

#include "magmadnn/parallel/strategy.h"

namespace magmadnn::distributed {

/// Replaces data[0, count) on every rank by the mean over ranks (see above).
template <typename T>
void ring_allreduce_mean(Communicator& comm, T* data, std::size_t count, int tag = 7100);

template <typename T>
class RingStrategy final : public Strategy<T> {
 public:
  RingStrategy(std::shared_ptr<Communicator> comm, StrategyOptions options) : Strategy<T>(std::move(comm), options) {}
  std::string name() const override { return "ring"; }
  void attach(model::NeuralNetwork<T>& net) override;
  bool wants_gradients() const override { return true; }
  void backward_finished(const std::vector<Tensor<T>*>& grads) override {
    grads_ = grads;
    on_finish();
  }

 private:
  void on_finish();
  std::vector<Tensor<T>*> grads_;
  std::vector<T> flat_;
  std::chrono::steady_clock::time_point step_mark_;
};

}  // namespace magmadnn::distributed
