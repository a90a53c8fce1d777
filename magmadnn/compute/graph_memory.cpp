#include "magmadnn/compute/graph_memory.h"

#include <algorithm>
#include <unordered_set>

namespace magmadnn::op {

template <typename T>
GraphMemory graph_memory(Operation<T>* root) {
  GraphMemory m;
  if (root == nullptr) return m;
  std::unordered_set<const void*> seen;
  for (Operation<T>* n : topological_order(root)) {
    ++m.nodes;
    const Tensor<T>& v = n->output();
    const MemoryManager<T>* s = v.get_memory_manager();
    if (s == nullptr || !seen.insert(s).second) continue;
    const std::size_t bytes = s->get_size() * sizeof(T);
    if (n->get_inputs().empty()) {
      m.leaves += bytes;
    } else {
      m.forward_values += bytes;
      m.by_kind[n->kind()] += bytes;
      m.largest_value = std::max(m.largest_value, bytes);
    }
  }
  return m;
}

template GraphMemory graph_memory<float>(Operation<float>*);
template GraphMemory graph_memory<double>(Operation<double>*);

}  // namespace magmadnn::op
