#include "magmadnn/layer/layer.h"

#include <map>
#include <mutex>
#include <unordered_set>

namespace magmadnn::layer {

namespace {
struct NameCounters {
  std::mutex mu;
  std::map<std::string, std::int64_t> next;
};
NameCounters& counters() {
  static NameCounters c;
  return c;
}
}  // namespace

std::string make_layer_name(const std::string& prefix) {
  NameCounters& c = counters();
  std::lock_guard<std::mutex> lock(c.mu);
  return prefix + "_" + std::to_string(++c.next[prefix]);
}

void reset_layer_names() {
  NameCounters& c = counters();
  std::lock_guard<std::mutex> lock(c.mu);
  c.next.clear();
}

template <typename T>
Shape Layer<T>::get_input_shape() const {
  return input_ ? input_->get_output_shape() : get_output_shape();
}

template <typename T>
Shape Layer<T>::get_output_shape() const {
  MAGMADNN_CHECK(output_, ValueError, "layer " << name_ << ": has no output (set_output was never called)");
  return output_->get_output_shape();
}

template <typename T>
std::vector<std::pair<std::string, op::Var<T>>> Layer<T>::named_weights() const {
  std::vector<std::pair<std::string, op::Var<T>>> out;
  out.reserve(weights_.size());
  for (std::size_t i = 0; i < weights_.size(); ++i) out.emplace_back(name_ + "/" + weight_keys_[i], weights_[i]);
  return out;
}

template <typename T>
std::int64_t Layer<T>::num_params() const {
  std::int64_t n = 0;
  for (const auto& w : weights_) n += w->value().size();
  return n;
}

template <typename T>
void Layer<T>::set_training(bool training) {
  training_ = training;
  if (!output_) return;
  // The layer's own nodes: everything below the output that is not also
  // below the input (nodes of earlier layers keep their own mode).
  std::unordered_set<op::Operation<T>*> before;
  if (input_) {
    for (op::Operation<T>* n : op::topological_order(input_.get())) before.insert(n);
  }
  for (op::Operation<T>* n : op::topological_order(output_.get())) {
    if (!before.count(n)) n->set_training(training);
  }
}

template <typename T>
op::Var<T> Layer<T>::add_weight(const std::string& key, const Shape& shape, const tensor_filler_t<T>& init) {
  op::Var<T> v = op::var<T>(name_ + "/" + key, shape, init, input_memory());
  add_weight(key, v);
  return v;
}

template <typename T>
void Layer<T>::add_weight(const std::string& key, op::Var<T> v) {
  MAGMADNN_CHECK(v, ValueError, "layer " << name_ << ": weight '" << key << "' is an empty handle");
  for (const auto& k : weight_keys_) {
    MAGMADNN_CHECK(k != key, ValueError, "layer " << name_ << ": two weights named '" << key << "'");
  }
  weights_.push_back(std::move(v));
  weight_keys_.push_back(key);
}

template <typename T>
void Layer<T>::add_weight(op::Var<T> v) {
  MAGMADNN_CHECK(v, ValueError, "layer " << name_ << ": weight is an empty handle");
  const std::string& n = v->get_name();
  const auto slash = n.rfind('/');
  add_weight(slash == std::string::npos ? n : n.substr(slash + 1), std::move(v));
}

template <typename T>
Shape Layer<T>::known_input_shape() const {
  MAGMADNN_CHECK(input_, ValueError, "layer " << name_ << ": built on an empty input handle");
  try {
    return input_->get_output_shape();
  } catch (const ValueError& e) {
    MAGMADNN_THROW(ValueError, type_name() << " layer " << name_
                                           << ": needs the shape of its input when it is built, but it is not "
                                              "known yet (build the network on layer::input, or give the "
                                              "placeholder a value first): "
                                           << e.what());
  }
}

template <typename T>
memory_t Layer<T>::input_memory() const {
  if (!input_) return MANAGED;
  for (op::Operation<T>* n : op::topological_order(input_.get())) {
    if (!n->get_inputs().empty()) continue;
    auto* leaf = dynamic_cast<op::Variable<T>*>(n);
    // Placeholders and data variables say where the batches live; a
    // constant somewhere in the graph says little.
    if (leaf != nullptr && leaf->role() != op::Variable<T>::Role::Constant) return n->output().get_memory_type();
  }
  return MANAGED;
}

template class Layer<float>;
template class Layer<double>;

}  // namespace magmadnn::layer
