/// @file gradients.h
/// Reverse-mode automatic differentiation over the compute graph.
///
///   auto table = op::gradients(loss, {W, b});    // modern
///   Tensor<float>* dW = table.get(W);
///   op::GradTable<float> t; op::get_grad_table({W, b}, loss, t);   // v1
///
/// Guarantees:
///  - the graph is evaluated first (cached values are reused), then nodes are
///    visited once each in reverse topological order;
///  - any fan-out: a node used by several consumers (or twice by one) gets
///    the sum of all contributions;
///  - a non-scalar `loss` is differentiated as the sum of its elements (the
///    backward pass is seeded with ones), like PyTorch's out.sum().backward();
///  - every gradient is a fresh buffer: it never aliases a forward value, and
///    later evaluations do not change it;
///  - only nodes on a path from the loss to a requested node are visited;
///    a requested node the loss does not depend on gets a zero gradient;
///  - eval() alone keeps no gradient state (inference is bookkeeping-free).
#pragma once

#include <functional>
#include <unordered_map>
#include <vector>

#include "magmadnn/compute/expr.h"

namespace magmadnn {
/// MagmaDNN v1 status type of get_grad_table (always 0: errors throw).
using magmadnn_error_t = int;
}  // namespace magmadnn

namespace magmadnn::op {

/// Gradients keyed by node.
template <typename T>
class GradTable {
 public:
  /// The gradient of `node`, or nullptr if the table has none.
  Tensor<T>* get(const std::type_identity_t<Expr<T>>& node);
  const Tensor<T>* get(const std::type_identity_t<Expr<T>>& node) const;
  /// Sets (replaces) the gradient of `node`.
  void set(const std::type_identity_t<Expr<T>>& node, Tensor<T> grad);
  bool contains(const std::type_identity_t<Expr<T>>& node) const { return get(node) != nullptr; }
  std::size_t get_size() const noexcept { return table_.size(); }
  void clear() noexcept { table_.clear(); }

 private:
  // Keeps each node alive while its gradient is here, so keys never dangle.
  struct Entry {
    OpPtr<T> node;
    Tensor<T> grad;
  };
  std::unordered_map<const Operation<T>*, Entry> table_;
};

/// What the backward pass does with the forward values it reads.
///  - Keep (the default): every node keeps its output, so the graph stays
///    evaluated and values can be read after the pass.
///  - Release: each node's output is dropped (Operation::drop_output) the
///    moment its last reader's backward step and its own have run, so the
///    memory of the activations serves the gradients of the earlier layers
///    instead of adding to them: a training step's peak is then about the
///    forward values plus the parameters' state, not that plus the backward
///    pass's gradients. The loss (the root) is kept; every other node with
///    inputs is recomputed by the next eval.
enum class ForwardValues { Keep, Release };

/// d(sum of loss's elements) / d(var) for each var in `vars`.
template <typename T>
GradTable<T> compute_gradients(const Expr<T>& loss, const std::vector<Expr<T>>& vars);

/// Called once per var, with its index in `vars` and its gradient, the moment
/// that gradient is final: its last reader's backward has run. In a layered
/// network that is reverse layer order, while the rest of the backward pass
/// is still to come, so a caller can start work on it (e.g. a non-blocking
/// allreduce) that overlaps the rest of the pass. The callback may modify the
/// gradient in place; the table returned holds what it leaves there. The
/// tensor stays valid until the table is destroyed.
template <typename T>
using GradientReady = std::function<void(std::size_t index, Tensor<T>& grad)>;

/// compute_gradients, calling `ready` for each var as its gradient is final
/// (see GradientReady). A var the loss does not depend on gets its zero
/// gradient, and its call, after the pass.
///
/// `seed` is the value the pass starts from at every element of the loss:
/// every gradient comes out multiplied by it. The backward pass is linear in
/// its seed, so this scales all gradients at no cost (one small tensor)
/// instead of one more pass over each gradient: e.g. 1 / ranks before an
/// allreduce that sums, or a loss scale. Equal to scaling afterwards up to
/// rounding, and bit-equal for a power of two.
template <typename T>
GradTable<T> compute_gradients(const Expr<T>& loss, const std::vector<Expr<T>>& vars, const GradientReady<T>& ready,
                               T seed = T(1), ForwardValues values = ForwardValues::Keep);
template <OpLike L>
GradTable<op_value_t<L>> gradients(const L& loss, const std::vector<Expr<op_value_t<L>>>& vars) {
  return compute_gradients<op_value_t<L>>(Expr<op_value_t<L>>(to_node(loss)), vars);
}

/// The update backward_update applies: var = beta * var + alpha * gradient
/// (plain gradient descent: alpha = -lr, beta = 1 - lr * weight decay).
template <typename T>
struct InPlaceUpdate {
  T alpha = T(-1);
  T beta = T(1);
};

/// One step of plain gradient descent fused into the backward pass: every
/// var becomes beta * var + alpha * d(sum of loss's elements)/d(var), and
/// no gradient is kept.
///
/// Why: the separate update re-reads each gradient and parameter after the
/// pass. Here a linear op folds the update into the GEMM that produces the
/// weight's gradient (its beta), so neither the gradient buffer nor the
/// update pass exists; other ops' gradients are applied the moment they are
/// complete, while still in cache.
///
/// Requires: every var is an op::Variable (ValueError otherwise).
/// Guarantees: the result of compute_gradients followed by the update, up to
/// rounding. Every backward step reads the forward values: a var is updated
/// once its last consumer's backward has run (a single consumer may fold
/// the update into its own backward, which the op orders after its reads of
/// the var); no later step reads it. A var the loss does not depend on
/// becomes beta * var. Each var is marked changed, as by the optimizers.
template <typename T>
void backward_update(const std::type_identity_t<Expr<T>>& loss, const std::vector<std::type_identity_t<Expr<T>>>& vars,
                     InPlaceUpdate<T> update, ForwardValues values = ForwardValues::Keep);

/// v1: fills `table` with the gradients of `graph` w.r.t. `vars` (existing
/// entries for other nodes are kept). Returns 0; errors throw.
template <typename T>
magmadnn_error_t get_grad_table(const std::vector<std::type_identity_t<Expr<T>>>& vars,
                                const std::type_identity_t<Expr<T>>& graph, GradTable<T>& table);

}  // namespace magmadnn::op
