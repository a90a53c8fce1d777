#include "magmadnn/compute/inference_plan.h"

#include <unordered_map>

#include "magmadnn/core/errors.h"

namespace magmadnn::op {

template <typename T>
InferencePlan<T>::InferencePlan(const Expr<T>& root, bool reuse_buffers)
    : pool_(std::make_shared<BufferPool<T>>()), reuse_(reuse_buffers) {
  MAGMADNN_CHECK(root.get() != nullptr, ValueError, "InferencePlan: empty graph");
  const std::vector<Operation<T>*> order = topological_order(root.get());
  std::unordered_map<const Operation<T>*, std::size_t> pos;
  for (Operation<T>* n : order) {
    pos.emplace(n, nodes_.size());
    nodes_.push_back(n->shared_from_this());
  }
  uses_.assign(nodes_.size(), 0);
  inputs_.resize(nodes_.size());
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    for (const auto& in : nodes_[k]->get_inputs()) {
      const std::size_t i = pos.at(in.get());
      inputs_[k].push_back(i);
      ++uses_[i];
    }
    if (!nodes_[k]->get_inputs().empty()) nodes_[k]->set_buffer_pool(pool_);
  }
}

template <typename T>
InferencePlan<T>::~InferencePlan() {
  for (const auto& n : nodes_) {
    if (n->buffer_pool() == pool_) n->set_buffer_pool(nullptr);  // a later plan may own it now
  }
}

template <typename T>
bool InferencePlan<T>::releasable(std::size_t k) const {
  const Operation<T>& n = *nodes_[k];
  if (n.get_inputs().empty() || n.output().empty()) return false;
  // A view (reshape) shares storage with the node it came from: recycling
  // either would overwrite the other's value.
  for (std::size_t j = 0; j < nodes_.size(); ++j) {
    if (j != k && nodes_[j]->output().shares_storage_with(n.output())) return false;
  }
  return true;
}

template <typename T>
const Tensor<T>& InferencePlan<T>::run() {
  const std::size_t root = nodes_.size() - 1;
  // The root's previous value is handed back first: otherwise the root would
  // hold one buffer the pool lacks during the run, and every run would need
  // one buffer more than the last. The root is then recomputed.
  if (reuse_ && releasable(root)) nodes_[root]->release_output();
  std::vector<int> remaining = uses_;
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    nodes_[k]->eval_self(false);
    if (!reuse_) continue;
    for (std::size_t i : inputs_[k]) {
      if (--remaining[i] == 0 && i != root && releasable(i)) nodes_[i]->release_output();
    }
  }
  return nodes_.back()->output();
}

template class InferencePlan<float>;
template class InferencePlan<double>;

}  // namespace magmadnn::op
