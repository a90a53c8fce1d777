/// @file expr.h
/// op::Expr<T>: the handle the op:: factories return, and the trait that lets
/// every factory accept any "op-like" argument.
///
/// Ownership rules (the whole story):
///  - Expr<T> is a shared owner of one node. Copying it is cheap; the node and
///    everything below it live while any handle (or consumer node) holds them.
///  - `op::Operation<T>* p = expr;` (v1 style) pins the node in a process-wide
///    arena and returns the raw pointer, which stays valid until `delete p`
///    (unpins; the node is destroyed when no handle or consumer remains) or
///    magmadnn_finalize(). Pinning is idempotent: one `delete` releases it.
///  - `delete expr;` on a handle (as v1's `delete aff;`) pins and unpins, so it
///    is harmless; the handle keeps owning the node.
///  - Factories also accept raw `Operation<T>*` / `Variable<T>*` arguments
///    (v1 code passes them) and take shared ownership via shared_from_this();
///    such a pointer must point to a live node.
///  - APIs that are not factories (GradTable::get, optimizers) take Expr<T>,
///    which converts from handles and raw pointers without pinning.
#pragma once

#include <concepts>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "magmadnn/compute/operation.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::op {

template <typename T>
class Expr {
 public:
  using value_type = T;

  Expr() = default;
  Expr(OpPtr<T> node) : node_(std::move(node)) {}  // NOLINT: implicit by design
  /// From a raw pointer to a live node (v1 code); takes shared ownership.
  Expr(Operation<T>* node)  // NOLINT: implicit by design
      : node_(node ? node->shared_from_this() : OpPtr<T>()) {
    MAGMADNN_CHECK(node != nullptr, ValueError, "op::Expr: null operation pointer");
  }

  Operation<T>* operator->() const { return checked(); }
  Operation<T>& operator*() const { return *checked(); }
  /// The node, without pinning (not for `delete`).
  Operation<T>* get() const noexcept { return node_.get(); }
  const OpPtr<T>& ptr() const noexcept { return node_; }
  explicit operator bool() const noexcept { return node_ != nullptr; }

  /// v1 compatibility: pins the node and returns a raw pointer (see above).
  operator Operation<T>*() const {  // NOLINT: implicit by design (v1 code)
    if (node_) detail::pin_node(static_cast<const void*>(node_.get()), node_);
    return node_.get();
  }

 protected:
  Operation<T>* checked() const {
    MAGMADNN_CHECK(node_ != nullptr, ValueError, "op::Expr: empty handle");
    return node_.get();
  }
  OpPtr<T> node_;
};

template <typename T>
class Variable;
template <typename T>
class Var;

/// Maps an op-like argument type to its element type and its node.
template <typename X, typename = void>
struct op_traits {};

template <typename T>
struct op_traits<Expr<T>> {
  using value_type = T;
  static OpPtr<T> node(const Expr<T>& e) {
    MAGMADNN_CHECK(e.ptr() != nullptr, ValueError, "op: empty expression handle used as an argument");
    return e.ptr();
  }
};
template <typename T>
struct op_traits<Var<T>> : op_traits<Expr<T>> {};

/// Raw pointers to Operation<T> or any node class derived from it.
template <typename N>
struct op_traits<N*, std::enable_if_t<std::is_base_of_v<Operation<typename std::remove_cv_t<N>::value_type>,
                                                        std::remove_cv_t<N>>>> {
  using value_type = typename std::remove_cv_t<N>::value_type;
  static OpPtr<value_type> node(N* p) {
    MAGMADNN_CHECK(p != nullptr, ValueError, "op: null operation pointer used as an argument");
    return std::const_pointer_cast<Operation<value_type>>(
        std::static_pointer_cast<const Operation<value_type>>(p->shared_from_this()));
  }
};

template <typename X>
concept OpLike = requires { typename op_traits<std::remove_cvref_t<X>>::value_type; };

template <OpLike X>
using op_value_t = typename op_traits<std::remove_cvref_t<X>>::value_type;

/// The shared node behind any op-like argument.
template <OpLike X>
OpPtr<op_value_t<X>> to_node(const X& x) {
  return op_traits<std::remove_cvref_t<X>>::node(x);
}

/// Two or more op-like arguments of one element type.
template <typename... X>
concept SameOpType = (OpLike<X> && ...) && requires {
  requires sizeof...(X) > 0;
} && (std::same_as<op_value_t<std::tuple_element_t<0, std::tuple<X...>>>, op_value_t<X>> && ...);

/// Wraps a freshly built node: checks shapes now when they are all known (so
/// mistakes surface where the graph is built) and returns the handle.
/// A placeholder without a value defers the check to eval().
template <typename T>
Expr<T> make_expr(OpPtr<T> node) {
  try {
    (void)node->get_output_shape();
  } catch (const ValueError&) {
    // an input's shape is not known yet (unset placeholder): checked at eval()
  }
  return Expr<T>(std::move(node));
}

/// Train (true) / eval (false) mode for every node of a graph (dropout, batchnorm).
template <typename T>
void set_training(const Expr<T>& root, bool training) {
  set_training<T>(root.get(), training);
}

}  // namespace magmadnn::op
