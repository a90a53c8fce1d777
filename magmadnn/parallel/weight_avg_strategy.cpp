#include "magmadnn/parallel/weight_avg_strategy.h"

#include "magmadnn/parallel/strategy_registry.h"

namespace magmadnn::distributed {

template <typename T>
void WeightAvgStrategy<T>::attach(model::NeuralNetwork<T>& net) {
  this->broadcast_initial_state(net);
  layout_ = detail::FlatParams<T>(net.parameters());
  flat_.assign(layout_.size(), T(0));
  model::TrainingPlugin<T>::attach(net);
  step_mark_ = std::chrono::steady_clock::now();
}

template <typename T>
void WeightAvgStrategy<T>::average() {
  layout_.read_values(flat_.data());
  this->comm_->allreduce(host_buffer(flat_.data(), flat_.size()), ReduceOp::avg);
  layout_.write_values(flat_.data());
  since_average_ = 0;
}

template <typename T>
void WeightAvgStrategy<T>::on_step_done() {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  StepTiming step;
  step.steps = 1;
  step.compute_seconds = std::chrono::duration<double>(t0 - step_mark_).count();
  if (++since_average_ >= this->options_.average_every) {
    this->comm_->set_step(this->timing().steps);
    average();
  }
  step_mark_ = Clock::now();
  step.comm_seconds = std::chrono::duration<double>(step_mark_ - t0).count();
  this->record_step(step);
}

template <typename T>
void WeightAvgStrategy<T>::finalize() {
  // Every rank took the same number of steps, so all agree on whether an
  // average is due.
  if (since_average_ > 0) average();
}

template class WeightAvgStrategy<float>;
template class WeightAvgStrategy<double>;

namespace {
const StrategyRegistrar<WeightAvgStrategy> registrar(
    {"weight-avg", "local steps, the weights averaged every distributed.average_every steps", 20, {}});
}  // namespace

}  // namespace magmadnn::distributed
