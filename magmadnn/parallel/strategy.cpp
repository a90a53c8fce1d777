#include "magmadnn/parallel/strategy.h"

#include "magmadnn/core/registry.h"
#include "magmadnn/parallel/flat_params.h"
#include "magmadnn/parallel/layer_state.h"
#include "magmadnn/parallel/strategy_registry.h"

namespace magmadnn::distributed {

const char* timeline_kind_name(TimelineEvent::Kind k) noexcept {
  switch (k) {
    case TimelineEvent::Kind::ready: return "ready";
    case TimelineEvent::Kind::launch: return "launch";
    case TimelineEvent::Kind::complete: return "complete";
    case TimelineEvent::Kind::backward_end: return "backward_end";
    case TimelineEvent::Kind::step_end: return "step_end";
  }
  return "?";
}

template <typename T>
Strategy<T>::Strategy(std::shared_ptr<Communicator> comm, StrategyOptions options)
    : comm_(std::move(comm)), options_(options) {
  MAGMADNN_CHECK(comm_ != nullptr, ValueError, "distributed strategy: null communicator");
  MAGMADNN_CHECK(options_.bucket_bytes > 0 && options_.first_bucket_bytes > 0, ValueError,
                 "distributed strategy: bucket_bytes (" << options_.bucket_bytes << ") and first_bucket_bytes ("
                                                        << options_.first_bucket_bytes << ") must be > 0");
  MAGMADNN_CHECK(options_.average_every >= 1, ValueError,
                 "distributed strategy: average_every = " << options_.average_every << " must be >= 1");
  MAGMADNN_CHECK(options_.staleness_bound >= 0, ValueError,
                 "distributed strategy: staleness_bound = " << options_.staleness_bound << " must be >= 0");
  MAGMADNN_CHECK(options_.server_rank >= 0 && options_.server_rank < comm_->size(), ValueError,
                 "distributed strategy: server_rank = " << options_.server_rank << " is not a rank of "
                                                        << comm_->size());
}

template <typename T>
void Strategy<T>::broadcast_initial_state(model::NeuralNetwork<T>& net) {
  if (comm_->size() == 1) return;
  detail::FlatParams<T> flat(exchanged_parameters(net));
  std::vector<T> values(flat.size());
  if (comm_->rank() == 0) flat.read_values(values.data());
  comm_->broadcast(host_buffer(values.data(), values.size()), 0);
  if (comm_->rank() != 0) flat.write_values(values.data());

  // Layer state (BatchNorm running statistics) starts equal too.
  broadcast_layer_state(*comm_, net, 0);
  // A learning-rate schedule reads the step count.
  std::int64_t steps = net.optimizer().step_count();
  comm_->broadcast(host_buffer(&steps, 1), 0);
  net.optimizer().set_step_count(steps);
}

template <typename T>
std::vector<op::Var<T>> Strategy<T>::exchanged_parameters(const model::NeuralNetwork<T>& net) const {
  const std::vector<op::Var<T>>& all = net.parameters();
  const std::vector<bool>& mask = options_.exchange;
  if (mask.empty()) return all;
  MAGMADNN_CHECK(mask.size() == all.size(), ValueError,
                 name() << " strategy: the exchange mask has " << mask.size() << " entries, the network "
                        << all.size() << " parameters");
  std::vector<op::Var<T>> out;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (mask[i]) out.push_back(all[i]);
  }
  return out;
}

template <typename T>
std::unique_ptr<Strategy<T>> make_strategy(const std::string& name, std::shared_ptr<Communicator> comm,
                                           const StrategyOptions& options) {
  const StrategyEntry& entry = strategy_entry(name);
  MAGMADNN_CHECK(entry.traits.serves_model_parallel || (options.exchange.empty() && !options.sum_gradients),
                 ValueError,
                 "distributed strategy '"
                     << name << "' cannot serve model-parallel layers (an exchange mask or summed gradients): only "
                     << names_text(strategy_names_where([](const StrategyTraits& t) { return t.serves_model_parallel; }))
                     << " does");
  return entry.factory<T>()(std::move(comm), options);
}

template class Strategy<float>;
template class Strategy<double>;
template std::unique_ptr<Strategy<float>> make_strategy<float>(const std::string&, std::shared_ptr<Communicator>,
                                                               const StrategyOptions&);
template std::unique_ptr<Strategy<double>> make_strategy<double>(const std::string&, std::shared_ptr<Communicator>,
                                                                 const StrategyOptions&);

}  // namespace magmadnn::distributed
