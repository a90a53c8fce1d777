#include "magmadnn/compute/gradients.h"

#include <optional>
#include <unordered_set>

#include "magmadnn/compute/grad_utils.h"
#include "magmadnn/compute/profiler.h"
#include "magmadnn/compute/variable.h"
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

namespace {

// The reverse pass shared by compute_gradients and backward_update. With
// `update` null it returns the gradients of `vars`; otherwise it applies the
// update to each var (see backward_update) and returns an empty table.
template <typename T>
GradTable<T> reverse_pass(const Expr<T>& loss, const std::vector<Expr<T>>& vars, const InPlaceUpdate<T>* update) {
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

  // In-place updates: the target of each requested variable, and how many
  // input slots read it (only a single reader may apply the update early).
  using Target = typename Operation<T>::UpdateTarget;
  std::unordered_map<const Operation<T>*, Target> targets;
  std::unordered_map<const Operation<T>*, int> readers;
  std::unordered_set<const Operation<T>*> done;
  if (update) {
    for (const auto& v : vars) {
      targets.emplace(v.get(), Target{&as_variable(v, "backward_update").value(), update->alpha, update->beta});
    }
    for (Operation<T>* n : order) {
      for (const auto& in : n->get_inputs()) ++readers[in.get()];
    }
  }
  auto apply = [&](const Operation<T>* node, const Tensor<T>* grad) {  // null grad: zero
    const Target& t = targets.at(node);
    std::optional<Profiler::Scope> scope;
    if (Profiler::enabled()) scope.emplace("optimizer", "update", node->get_name(), detail::device_sync_of(*t.dst));
    if (grad) {
      math::axpby(t.alpha, *grad, t.beta, *t.dst);
    } else {
      math::unary(UnaryOp::Scale, *t.dst, *t.dst, t.beta);
    }
    done.insert(node);
  };

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
      std::vector<const Target*> into(ins.size(), nullptr);
      std::vector<bool> applied(ins.size(), false);
      for (std::size_t i = 0; i < ins.size() && update; ++i) {
        auto t = targets.find(ins[i].get());
        if (needed[i] && t != targets.end() && readers[ins[i].get()] == 1) into[i] = &t->second;
      }
      {
        std::optional<Profiler::Scope> scope;
        if (Profiler::enabled()) {
          scope.emplace("backward", n->kind(), detail::profile_label(*n), detail::device_sync_of(g->second));
        }
        n->backward_into(g->second, needed, gin, into, applied);
      }
      for (std::size_t i = 0; i < ins.size(); ++i) {
        if (!needed[i]) continue;
        if (applied[i]) {
          done.insert(ins[i].get());
          continue;
        }
        const Shape& expect = ins[i]->output().shape();
        MAGMADNN_CHECK(gin[i].shape() == expect, ShapeError,
                       "gradients: " << n->kind() << " produced a gradient of shape " << gin[i].shape()
                                     << " for input " << i << " of shape " << expect);
        if (into[i] != nullptr) {  // the only reader is done: the gradient is complete
          apply(ins[i].get(), &gin[i]);
          continue;
        }
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
    if (update) {
      if (done.count(v.get())) continue;
      // Several readers: after the whole pass; none (the loss does not depend on v): a zero gradient.
      apply(v.get(), g != grads.end() ? &g->second : nullptr);
    } else if (g != grads.end()) {
      table.set(v, std::move(g->second));
      grads.erase(g);
    } else if (!table.contains(v)) {
      const Tensor<T>& val = v->output();
      table.set(v, detail::full_like(val.shape(), T(0), val));
    }
  }
  return table;
}

}  // namespace

template <typename T>
GradTable<T> compute_gradients(const Expr<T>& loss, const std::vector<Expr<T>>& vars) {
  return reverse_pass<T>(loss, vars, nullptr);
}

template <typename T>
void backward_update(const std::type_identity_t<Expr<T>>& loss, const std::vector<std::type_identity_t<Expr<T>>>& vars,
                     InPlaceUpdate<T> update) {
  reverse_pass<T>(loss, vars, &update);
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
  template magmadnn_error_t get_grad_table<T>(const std::vector<Expr<T>>&, const Expr<T>&, GradTable<T>&);       \
  template void backward_update<T>(const Expr<T>&, const std::vector<Expr<T>>&, InPlaceUpdate<T>);
MAGMADNN_INSTANTIATE_GRADIENTS(float)
MAGMADNN_INSTANTIATE_GRADIENTS(double)

}  // namespace magmadnn::op
