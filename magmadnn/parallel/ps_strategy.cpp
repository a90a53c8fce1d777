#include "magmadnn/parallel/ps_strategy.h"

#include "magmadnn/parallel/strategy_registry.h"

namespace magmadnn::distributed {

namespace {
double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

template <typename T>
void PsStrategy<T>::attach(model::NeuralNetwork<T>& net) {
  this->broadcast_initial_state(net);
  layout_ = detail::FlatParams<T>(net.parameters());
  grads_.assign(layout_.num_params(), nullptr);
  flat_.assign(layout_.size(), T(0));
  if (is_server()) gathered_.assign(layout_.size() * static_cast<std::size_t>(this->comm_->size()), T(0));
  model::TrainingPlugin<T>::attach(net);
  step_mark_ = std::chrono::steady_clock::now();
}

template <typename T>
void PsStrategy<T>::on_finish() {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  step_ = {};
  step_.steps = 1;
  step_.compute_seconds = seconds(t0 - step_mark_);
  for (std::size_t i = 0; i < grads_.size(); ++i) {
    MAGMADNN_CHECK(grads_[i] != nullptr, ValueError, "PsStrategy: gradient " << i << " was not handed over");
    detail::read_tensor(*grads_[i], flat_.data() + layout_.offset(i));
  }
  Communicator& comm = *this->comm_;
  comm.set_step(this->timing().steps);
  const int root = this->options_.server_rank;
  comm.gather(host_buffer(static_cast<const T*>(flat_.data()), flat_.size()),
              is_server() ? host_buffer(gathered_.data(), gathered_.size()) : Buffer{}, root);
  const auto gathered = Clock::now();
  phases_.gathering_seconds += seconds(gathered - t0);
  if (is_server()) {
    // Rank order, element by element: a fixed summation order.
    const std::size_t n = flat_.size(), ranks = static_cast<std::size_t>(comm.size());
    for (std::size_t j = 0; j < n; ++j) {
      T sum = gathered_[j];
      for (std::size_t r = 1; r < ranks; ++r) sum += gathered_[r * n + j];
      flat_[j] = sum / static_cast<T>(ranks);
    }
    for (std::size_t i = 0; i < grads_.size(); ++i) detail::write_tensor(*grads_[i], flat_.data() + layout_.offset(i));
  }
  for (auto& g : grads_) g = nullptr;
  step_mark_ = Clock::now();
  step_.comm_seconds = seconds(step_mark_ - t0);
  phases_.averaging_seconds += seconds(step_mark_ - gathered);
}

template <typename T>
void PsStrategy<T>::on_update_done() {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  step_.compute_seconds += seconds(t0 - step_mark_);  // the server's optimizer step
  if (is_server()) layout_.read_values(flat_.data());
  this->comm_->broadcast(host_buffer(flat_.data(), flat_.size()), this->options_.server_rank);
  if (!is_server()) layout_.write_values(flat_.data());
  step_mark_ = Clock::now();
  step_.comm_seconds += seconds(step_mark_ - t0);
  phases_.broadcasting_seconds += seconds(step_mark_ - t0);
  ++phases_.steps;
  this->record_step(step_);
}

template class PsStrategy<float>;
template class PsStrategy<double>;

namespace {
const StrategyRegistrar<PsStrategy> registrar(
    {"ps", "rank 0 gathers and averages the gradients, runs the optimizer and broadcasts the weights", 30, {}});
}  // namespace

}  // namespace magmadnn::distributed
