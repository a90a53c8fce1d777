#include "magmadnn/compute/gradients.h"

#include <optional>
#include <unordered_set>

#include "magmadnn/compute/grad_utils.h"
#include "magmadnn/compute/profiler.h"
#include "magmadnn/tensor/dispatch.h"

namespace magmadnn::op {

template <typename T>
Tensor<T>* GradTable<T>::get(const std::type_identity_t<Expr<T>>& node) {
  auto it = table_.find(node.get());
  return it == table_.end() ? nullptr : &it->second.grad;
}

template <typename T>
const Tensor<T>* GradTable<T>::get(const std::type_identity_t<Expr<T>>& node) const {
  auto it = table_.find(node.get());
  return it == table_.end() ? nullptr : &it->second.grad;
}

template <typename T>
void GradTable<T>::set(const std::type_identity_t<Expr<T>>& node, Tensor<T> grad) {
  MAGMADNN_CHECK(node.get() != nullptr, ValueError, "GradTable::set: empty node");
  table_[node.get()] = Entry{node.ptr(), std::move(grad)};
}

template <typename T>
GradTable<T> compute_gradients(const Expr<T>& loss, const std::vector<Expr<T>>& vars) {
  MAGMADNN_CHECK(loss.get() != nullptr, ValueError, "gradients: empty loss expression");
  Operation<T>* root = loss.get();
  root->eval();  // makes every forward value current (cached nodes are reused)

  std::unordered_set<const Operation<T>*> requested;
  for (const auto& v : vars) {
    MAGMADNN_CHECK(v.get() != nullptr, ValueError, "gradients: empty variable handle");
    requested.insert(v.get());
  }

  const std::vector<Operation<T>*> order = topological_order(root);
  // A node needs a gradient if it is requested or lies above a requested node.
  std::unordered_set<const Operation<T>*> on_path;
  for (Operation<T>* n : order) {
    bool need = requested.count(n) > 0;
    for (const auto& in : n->get_inputs()) need = need || on_path.count(in.get()) > 0;
    if (need) on_path.insert(n);
  }

  std::unordered_map<const Operation<T>*, Tensor<T>> grads;
  if (on_path.count(root)) {
    const Tensor<T>& out = root->output();
    grads.emplace(root, detail::full_like(out.shape(), T(1), out));
  }

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Operation<T>* n = *it;
    auto g = grads.find(n);
    if (g == grads.end()) continue;
    const auto& ins = n->get_inputs();
    std::vector<bool> needed(ins.size());
    bool any = false;
    for (std::size_t i = 0; i < ins.size(); ++i) any |= (needed[i] = on_path.count(ins[i].get()) > 0);
    if (any) {
      std::vector<Tensor<T>> gin(ins.size());
      {
        std::optional<Profiler::Scope> scope;
        if (Profiler::enabled()) {
          scope.emplace("backward", n->kind(), detail::profile_label(*n), detail::device_sync_of(g->second));
        }
        n->backward(g->second, needed, gin);
      }
      for (std::size_t i = 0; i < ins.size(); ++i) {
        if (!needed[i]) continue;
        const Shape& expect = ins[i]->output().shape();
        MAGMADNN_CHECK(gin[i].shape() == expect, ShapeError,
                       "gradients: " << n->kind() << " produced a gradient of shape " << gin[i].shape()
                                     << " for input " << i << " of shape " << expect);
        auto acc = grads.find(ins[i].get());
        if (acc == grads.end()) {
          grads.emplace(ins[i].get(), std::move(gin[i]));
        } else {
          math::add(acc->second, gin[i], acc->second);
        }
      }
    }
    // Intermediate gradients are freed as soon as they have been propagated.
    if (!requested.count(n)) grads.erase(n);
  }

  GradTable<T> table;
  for (const auto& v : vars) {
    auto g = grads.find(v.get());
    if (g != grads.end()) {
      table.set(v, std::move(g->second));
      grads.erase(g);
    } else if (!table.contains(v)) {
      const Tensor<T>& val = v->output();
      table.set(v, detail::full_like(val.shape(), T(0), val));
    }
  }
  return table;
}

template <typename T>
magmadnn_error_t get_grad_table(const std::vector<std::type_identity_t<Expr<T>>>& vars,
                                const std::type_identity_t<Expr<T>>& graph, GradTable<T>& table) {
  GradTable<T> fresh = compute_gradients<T>(graph, vars);
  for (const auto& v : vars) table.set(v, std::move(*fresh.get(v)));
  return 0;
}

#define MAGMADNN_INSTANTIATE_GRADIENTS(T)                                                              \
  template class GradTable<T>;                                                                         \
  template GradTable<T> compute_gradients<T>(const Expr<T>&, const std::vector<Expr<T>>&);                      \
  template magmadnn_error_t get_grad_table<T>(const std::vector<Expr<T>>&, const Expr<T>&, GradTable<T>&);
MAGMADNN_INSTANTIATE_GRADIENTS(float)
MAGMADNN_INSTANTIATE_GRADIENTS(double)

}  // namespace magmadnn::op
