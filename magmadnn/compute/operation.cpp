#include "magmadnn/compute/operation.h"

#include <mutex>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "magmadnn/compute/blocked_output.h"
#include "magmadnn/compute/profiler.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/dispatch.h"

namespace magmadnn::op {

namespace {
// The compat arena for raw pointers handed to v1 code. Deliberately never
// destroyed: a static destructor would run after the backends may be gone,
// and freeing tensors then is unsafe. magmadnn_finalize() empties it.
struct PinArena {
  std::mutex mu;
  std::unordered_map<const void*, std::shared_ptr<const void>> nodes;
};
PinArena& arena() {
  static PinArena* a = new PinArena;  // NOLINT: intentionally immortal, see above
  return *a;
}
}  // namespace

namespace detail {
void pin_node(const void* key, std::shared_ptr<const void> owner) {
  PinArena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  a.nodes.emplace(key, std::move(owner));
}

void unpin_node(const void* key) noexcept {
  std::shared_ptr<const void> released;  // destroyed after the lock is dropped
  PinArena& a = arena();
  {
    std::lock_guard<std::mutex> lock(a.mu);
    auto it = a.nodes.find(key);
    if (it == a.nodes.end()) return;
    released = std::move(it->second);
    a.nodes.erase(it);
  }
}
}  // namespace detail

void release_pinned_nodes() {
  std::unordered_map<const void*, std::shared_ptr<const void>> released;
  PinArena& a = arena();
  {
    std::lock_guard<std::mutex> lock(a.mu);
    released.swap(a.nodes);
  }
}

std::size_t pinned_node_count() {
  PinArena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  return a.nodes.size();
}

template <typename T>
Operation<T>::Operation(std::string name, std::vector<OpPtr<T>> inputs)
    : inputs_(std::move(inputs)), name_(std::move(name)) {
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    MAGMADNN_CHECK(inputs_[i] != nullptr, ValueError, name_ << ": input " << i << " is null");
  }
  seen_versions_.assign(inputs_.size(), 0);
}

template <typename T>
std::vector<Operation<T>*> topological_order(Operation<T>* root) {
  std::vector<Operation<T>*> order;
  std::unordered_set<Operation<T>*> done;
  // (node, next input to visit): an explicit stack instead of recursion.
  std::vector<std::pair<Operation<T>*, std::size_t>> stack;
  std::unordered_set<Operation<T>*> on_stack;
  stack.emplace_back(root, 0);
  on_stack.insert(root);
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    const auto& ins = node->get_inputs();
    if (next < ins.size()) {
      Operation<T>* child = ins[next++].get();
      if (!done.count(child) && !on_stack.count(child)) {
        stack.emplace_back(child, 0);
        on_stack.insert(child);
      }
      continue;
    }
    Operation<T>* finished = node;
    stack.pop_back();
    on_stack.erase(finished);
    done.insert(finished);
    order.push_back(finished);
  }
  return order;
}

template <typename T>
Tensor<T>* Operation<T>::eval(bool recompute) {
  if (inputs_.empty()) {
    // A leaf hands out its own, writable tensor: count it as a change so that
    // writes through the pointer reach the dependents.
    check_ready();
    ++version_;
    evaluated_ = true;
    return &output_;
  }
  for (Operation<T>* n : topological_order(this)) n->eval_self(recompute);
  // A node holding the blocked layout (blocked_output.h) is read from
  // outside the graph here: hand out NCHW.
  if (auto* b = dynamic_cast<BlockedOutput<T>*>(this)) return b->plain_output(output_);
  return &output_;
}

template <typename T>
bool Operation<T>::eval_self(bool recompute) {
  if (inputs_.empty()) {
    check_ready();
    evaluated_ = true;
    return false;
  }
  bool stale = recompute || !evaluated_ || dirty_;
  for (std::size_t i = 0; i < inputs_.size() && !stale; ++i) stale = inputs_[i]->version_ != seen_versions_[i];
  if (!stale) return false;
  {
    std::optional<Profiler::Scope> scope;
    if (Profiler::enabled()) {
      scope.emplace("forward", kind(), detail::profile_label(*this), detail::device_sync_of(inputs_[0]->output_));
    }
    forward();
  }
  for (std::size_t i = 0; i < inputs_.size(); ++i) seen_versions_[i] = inputs_[i]->version_;
  ++version_;
  ++eval_count_;
  evaluated_ = true;
  dirty_ = false;
  return true;
}

template <typename T>
Shape Operation<T>::get_output_shape() const {
  if (inputs_.empty()) {
    check_ready();
    return output_.shape();
  }
  // Each node's shape once, bottom up without recursion: inferring per path
  // cost 2^k on a network of k residual blocks (every block's input is read
  // twice), minutes to build ResNet-50 or GoogLeNet.
  std::unordered_map<const Operation<T>*, Shape> known;
  std::vector<std::pair<const Operation<T>*, bool>> stack{{this, false}};  // node, inputs pushed
  while (!stack.empty()) {
    const auto [n, expanded] = stack.back();
    if (known.count(n)) {
      stack.pop_back();
    } else if (n->inputs_.empty()) {
      n->check_ready();
      known.emplace(n, n->output_.shape());
      stack.pop_back();
    } else if (!expanded) {
      stack.back().second = true;
      for (const auto& i : n->inputs_) {
        if (!known.count(i.get())) stack.emplace_back(i.get(), false);
      }
    } else {
      std::vector<Shape> shapes;
      shapes.reserve(n->inputs_.size());
      for (const auto& i : n->inputs_) shapes.push_back(known.at(i.get()));
      known.emplace(n, n->infer_shape(shapes));
      stack.pop_back();
    }
  }
  return known.at(this);
}

template <typename T>
std::string Operation<T>::to_string() const {
  if (inputs_.empty()) return name_;
  std::ostringstream os;
  os << kind() << '(';
  for (std::size_t i = 0; i < inputs_.size(); ++i) os << (i ? ", " : "") << inputs_[i]->to_string();
  os << ')';
  return os.str();
}

template <typename T>
Tensor<T>* Operation<T>::get_output_tensor() {
  ++version_;
  return &output_;
}

template <typename T>
void Operation<T>::replace_input(std::size_t i, OpPtr<T> node) {
  MAGMADNN_CHECK(i < inputs_.size() && node, IndexError,
                 name_ << ": cannot replace input " << i << " of " << inputs_.size());
  inputs_[i] = std::move(node);
  dirty_ = true;
}

template <typename T>
Tensor<T>& Operation<T>::output_buffer(const Shape& s, const Tensor<T>& like) {
  if (output_.empty() || output_.shape() != s || output_.get_memory_type() != like.get_memory_type() ||
      output_.get_device_id() != like.get_device_id()) {
    // The old buffer is dropped, not pooled: a stale view of it (a reshape
    // consumer not yet re-evaluated) may still exist.
    output_ = pool_ ? pool_->acquire(s, like.get_memory_type(), like.get_device_id())
                    : Tensor<T>(s, like.get_memory_type(), like.get_device_id());
  }
  return output_;
}

template <typename T>
void Operation<T>::release_output() {
  if (!pool_ || inputs_.empty()) return;  // a leaf's tensor is its value, never recycled
  pool_->release(std::move(output_));
  output_ = Tensor<T>();
  dirty_ = true;
}

template <typename T>
void Operation<T>::drop_output() noexcept {
  if (pool_ || inputs_.empty() || output_.empty()) return;
  output_ = Tensor<T>();
  dirty_ = true;
}

template <typename T>
void set_training(Operation<T>* root, bool training) {
  MAGMADNN_CHECK(root != nullptr, ValueError, "set_training: null graph");
  for (Operation<T>* n : topological_order(root)) n->set_training(training);
}

#define MAGMADNN_INSTANTIATE_OPERATION(T)                                  \
  template class Operation<T>;                                             \
  template std::vector<Operation<T>*> topological_order(Operation<T>*);    \
  template void set_training(Operation<T>*, bool);
MAGMADNN_INSTANTIATE_OPERATION(float)
MAGMADNN_INSTANTIATE_OPERATION(double)

}  // namespace magmadnn::op
