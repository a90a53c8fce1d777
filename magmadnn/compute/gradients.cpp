#include "magmadnn/compute/gradients.h"

#include <algorithm>
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

// The reverse pass in three parts: plan (which nodes need a gradient, and how
// many input slots read each one), visit (reverse topological order, each
// node's backward once, contributions summed), and a sink that receives each
// requested variable's gradient the moment it is final: collected into a
// table, handed to a gradient-ready callback, or applied as an update.

template <typename T>
struct Plan {
  Operation<T>* root = nullptr;
  std::vector<Operation<T>*> order;                        // topological, root last
  std::unordered_map<const Operation<T>*, std::size_t> requested;  // node -> index in vars
  std::unordered_set<const Operation<T>*> on_path;         // requested, or above a requested node
  std::unordered_map<const Operation<T>*, int> readers;    // input slots on the path that read each node
  std::unordered_map<const Operation<T>*, int> pending;    // of those, the ones still to contribute
};

template <typename T>
Plan<T> plan(const Expr<T>& loss, const std::vector<Expr<T>>& vars) {
  MAGMADNN_CHECK(loss.get() != nullptr, ValueError, "gradients: empty loss expression");
  Plan<T> p;
  p.root = loss.get();
  p.root->eval();  // makes every forward value current (cached nodes are reused)
  for (std::size_t i = 0; i < vars.size(); ++i) {
    MAGMADNN_CHECK(vars[i].get() != nullptr, ValueError, "gradients: empty variable handle");
    p.requested.emplace(vars[i].get(), i);
  }
  p.order = topological_order(p.root);
  for (Operation<T>* n : p.order) {
    bool need = p.requested.count(n) > 0;
    for (const auto& in : n->get_inputs()) need = need || p.on_path.count(in.get()) > 0;
    if (need) p.on_path.insert(n);
  }
  // Only consumers on the path receive a gradient, so only they contribute.
  for (Operation<T>* n : p.order) {
    if (!p.on_path.count(n)) continue;
    for (const auto& in : n->get_inputs()) {
      if (p.on_path.count(in.get())) ++p.readers[in.get()];
    }
  }
  p.pending = p.readers;
  return p;
}

// Receives each requested variable's final gradient (null: the loss does
// not depend on it), and may take over the update of a variable with a single
// reader (`target`: the consumer's backward then applies it itself).
template <typename T>
struct Sink {
  virtual ~Sink() = default;
  virtual const typename Operation<T>::UpdateTarget* target(const Operation<T>*) { return nullptr; }
  virtual void final_gradient(std::size_t index, const Operation<T>* node, Tensor<T>* grad) = 0;
};

template <typename T>
void visit(Plan<T>& p, Sink<T>& sink, T seed = T(1), ForwardValues values = ForwardValues::Keep) {
  std::unordered_map<const Operation<T>*, Tensor<T>> grads;
  std::unordered_set<const Operation<T>*> finished;
  auto finish = [&](const Operation<T>* node, Tensor<T>* grad) {
    auto r = p.requested.find(node);
    if (r != p.requested.end() && finished.insert(node).second) sink.final_gradient(r->second, node, grad);
  };
  if (p.on_path.count(p.root)) {
    const Tensor<T>& out = p.root->output();
    grads.emplace(p.root, detail::full_like(out.shape(), seed, out));
  }
  using Target = typename Operation<T>::UpdateTarget;
  // Every reader of a node comes after it in topological order, so once the
  // reverse walk has passed a node, no backward step reads its value again.
  Operation<T>* passed = nullptr;
  const auto release = [&] {
    if (values == ForwardValues::Release && passed != nullptr && passed != p.root) passed->drop_output();
  };
  for (auto it = p.order.rbegin(); it != p.order.rend(); ++it) {
    release();
    Operation<T>* n = passed = *it;
    auto g = grads.find(n);
    if (g == grads.end()) continue;
    // A reference, not the iterator: inserting below may rehash the map,
    // which keeps references to elements valid but not iterators.
    Tensor<T>& grad_out = g->second;
    const bool is_requested = p.requested.count(n) > 0;
    const auto& ins = n->get_inputs();
    // Every consumer has contributed by now. A requested node with inputs
    // hands its gradient over after passing it on (the sink may move it).
    if (is_requested && ins.empty()) finish(n, &grad_out);
    std::vector<bool> needed(ins.size());
    bool any = false;
    for (std::size_t i = 0; i < ins.size(); ++i) any |= (needed[i] = p.on_path.count(ins[i].get()) > 0);
    if (any) {
      std::vector<Tensor<T>> gin(ins.size());
      std::vector<const Target*> into(ins.size(), nullptr);
      std::vector<bool> applied(ins.size(), false);
      for (std::size_t i = 0; i < ins.size(); ++i) {
        // Only a single reader may fold the update into its own backward.
        if (needed[i] && p.readers[ins[i].get()] == 1) into[i] = sink.target(ins[i].get());
      }
      // An input whose gradient is grad_out itself (an add's) takes it
      // without the copy backward() would make: added to the input's running
      // sum, or, for the first without one, moved once backward() has run
      // (only when this node's own gradient is not handed over afterwards).
      std::vector<bool> ask = needed, summed(ins.size(), false);
      std::size_t moved = ins.size();
      for (std::size_t i = 0; i < ins.size(); ++i) {
        if (!needed[i] || into[i] || !n->gradient_is_grad_out(i)) continue;
        auto acc = grads.find(ins[i].get());
        if (acc != grads.end()) {
          math::add(acc->second, grad_out, acc->second);
          summed[i] = true;
          ask[i] = false;
        } else if (moved == ins.size() && !is_requested) {
          moved = i;
          ask[i] = false;
        }
      }
      if (std::find(ask.begin(), ask.end(), true) != ask.end()) {
        std::optional<Profiler::Scope> scope;
        if (Profiler::enabled()) {
          scope.emplace("backward", n->kind(), detail::profile_label(*n), detail::device_sync_of(grad_out));
        }
        n->backward_into(grad_out, ask, gin, into, applied);
      }
      if (moved < ins.size()) gin[moved] = std::move(grad_out);
      for (std::size_t i = 0; i < ins.size(); ++i) {
        if (!needed[i]) continue;
        const Operation<T>* in = ins[i].get();
        --p.pending[in];
        if (applied[i]) {  // the consumer folded the update in (single reader)
          finished.insert(in);
          continue;
        }
        auto acc = grads.find(in);
        if (!summed[i]) {  // a summed input's grad_out is in acc already
          const Shape& expect = ins[i]->output().shape();
          MAGMADNN_CHECK(gin[i].shape() == expect, ShapeError,
                         "gradients: " << n->kind() << " produced a gradient of shape " << gin[i].shape()
                                       << " for input " << i << " of shape " << expect);
          if (acc == grads.end()) {
            acc = grads.emplace(in, std::move(gin[i])).first;
          } else {
            math::add(acc->second, gin[i], acc->second);
          }
        }
        // A requested leaf is never visited as a node with inputs of its own,
        // so its gradient is handed over once its last reader has contributed.
        if (p.pending[in] == 0 && p.requested.count(in) && in->get_inputs().empty()) finish(in, &acc->second);
      }
    }
    if (is_requested && !ins.empty()) finish(n, &grad_out);
    // Intermediate gradients are freed as soon as they have been propagated.
    if (!is_requested) grads.erase(n);
  }
  release();
  for (const auto& [node, index] : p.requested) {
    if (finished.count(node)) continue;
    auto g = grads.find(node);
    finish(node, g != grads.end() ? &g->second : nullptr);  // null: the loss does not depend on it
  }
}

// Collects gradients into a table, calling `ready` first for each.
template <typename T>
struct TableSink : Sink<T> {
  const std::vector<Expr<T>>& vars;
  const GradientReady<T>* ready;
  GradTable<T> table;
  TableSink(const std::vector<Expr<T>>& v, const GradientReady<T>* r) : vars(v), ready(r) {}
  void final_gradient(std::size_t index, const Operation<T>* node, Tensor<T>* grad) override {
    const Expr<T>& v = vars[index];
    if (grad) {
      table.set(v, std::move(*grad));
    } else if (!table.contains(v)) {
      const Tensor<T>& val = v->output();
      table.set(v, detail::full_like(val.shape(), T(0), val));
    }
    if (ready && *ready) (*ready)(index, *table.get(v));
  }
};

// Applies var = beta * var + alpha * gradient as each gradient is final; an
// update that is not folded into a GEMM keeps the variable's low-precision copy
// current as it writes (LowPrecisionCache::axpby).
template <typename T>
struct UpdateSink : Sink<T> {
  using Target = typename Operation<T>::UpdateTarget;
  std::unordered_map<const Operation<T>*, Target> targets;
  UpdateSink(const std::vector<Expr<T>>& vars, InPlaceUpdate<T> u) {
    for (const auto& v : vars) {
      Variable<T>& var = as_variable(v, "backward_update");
      targets.emplace(v.get(), Target{&var.value(), u.alpha, u.beta, &var.low_precision_cache()});
    }
  }
  const Target* target(const Operation<T>* node) override {
    auto t = targets.find(node);
    return t == targets.end() ? nullptr : &t->second;
  }
  void final_gradient(std::size_t, const Operation<T>* node, Tensor<T>* grad) override {
    const Target& t = targets.at(node);
    std::optional<Profiler::Scope> scope;
    if (Profiler::enabled()) scope.emplace("optimizer", "update", node->get_name(), detail::device_sync_of(*t.dst));
    if (grad) {
      t.low->axpby(t.alpha, *grad, t.beta, *t.dst);
    } else {
      math::unary(UnaryOp::Scale, *t.dst, *t.dst, t.beta);
    }
  }
};

}  // namespace

template <typename T>
GradTable<T> compute_gradients(const Expr<T>& loss, const std::vector<Expr<T>>& vars, const GradientReady<T>& ready,
                               T seed, ForwardValues values) {
  Plan<T> p = plan(loss, vars);
  TableSink<T> sink(vars, &ready);
  visit(p, sink, seed, values);
  return std::move(sink.table);
}

template <typename T>
GradTable<T> compute_gradients(const Expr<T>& loss, const std::vector<Expr<T>>& vars) {
  return compute_gradients<T>(loss, vars, GradientReady<T>{});
}

template <typename T>
void backward_update(const std::type_identity_t<Expr<T>>& loss, const std::vector<std::type_identity_t<Expr<T>>>& vars,
                     InPlaceUpdate<T> update, ForwardValues values) {
  Plan<T> p = plan<T>(loss, vars);
  UpdateSink<T> sink(vars, update);
  visit(p, sink, T(1), values);
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
  template GradTable<T> compute_gradients<T>(const Expr<T>&, const std::vector<Expr<T>>&, const GradientReady<T>&, T, ForwardValues); \
  template magmadnn_error_t get_grad_table<T>(const std::vector<Expr<T>>&, const Expr<T>&, GradTable<T>&);       \
  template void backward_update<T>(const Expr<T>&, const std::vector<Expr<T>>&, InPlaceUpdate<T>, ForwardValues);
MAGMADNN_INSTANTIATE_GRADIENTS(float)
MAGMADNN_INSTANTIATE_GRADIENTS(double)

}  // namespace magmadnn::op
