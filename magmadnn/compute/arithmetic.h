/// @file arithmetic.h
/// Elementwise arithmetic on graph nodes. Every argument may be an Expr, a
/// Var, or a raw Operation / Variable pointer (v1); all operands of one call
/// share the element type. Binary ops broadcast NumPy style, and their
/// gradients are summed back to each operand's shape. Shape mismatches throw
/// ShapeError naming the op and both shapes, at graph-building time when the
/// shapes are known, else at eval().
#pragma once

#include <initializer_list>
#include <type_traits>
#include <vector>

#include "magmadnn/compute/nodes.h"
#include "magmadnn/compute/variable.h"

namespace magmadnn::op {

namespace detail {
template <typename A, typename B>
Expr<op_value_t<A>> binary(BinaryOp op, const A& a, const B& b) {
  using T = op_value_t<A>;
  return make_expr<T>(std::make_shared<BinaryNode<T>>(op, to_node(a), to_node(b)));
}
template <typename X>
Expr<op_value_t<X>> unary(UnaryOp op, op_value_t<X> p, const X& x) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<UnaryNode<T>>(op, p, to_node(x)));
}
}  // namespace detail

/// a + b. The trailing flags of v1 (copy, needs_grad) are accepted and ignored.
template <OpLike A, OpLike B>
  requires SameOpType<A, B>
Expr<op_value_t<A>> add(const A& a, const B& b, bool /*copy*/ = true, bool /*needs_grad*/ = true) {
  return detail::binary(BinaryOp::Add, a, b);
}
/// a - b.
template <OpLike A, OpLike B>
  requires SameOpType<A, B>
Expr<op_value_t<A>> sub(const A& a, const B& b) {
  return detail::binary(BinaryOp::Sub, a, b);
}
/// Hadamard (elementwise) product a * b.
template <OpLike A, OpLike B>
  requires SameOpType<A, B>
Expr<op_value_t<A>> product(const A& a, const B& b) {
  return detail::binary(BinaryOp::Mul, a, b);
}
/// Elementwise a / b.
template <OpLike A, OpLike B>
  requires SameOpType<A, B>
Expr<op_value_t<A>> div(const A& a, const B& b) {
  return detail::binary(BinaryOp::Div, a, b);
}
/// f(x; p) for an op held as a value: any row of the op table
/// (backend/unary_op_table.h), p its parameter where it has one. The named
/// functions (negative, exp, sigmoid, ...) build the same node; this one
/// serves code that chooses the op at run time (layers, tests that loop
/// over the table).
template <OpLike X>
Expr<op_value_t<X>> unary(UnaryOp op, const X& x, double p = 0) {
  return detail::unary(op, static_cast<op_value_t<X>>(p), x);
}
/// -x.
template <OpLike X>
Expr<op_value_t<X>> negative(const X& x) {
  return detail::unary(UnaryOp::Neg, op_value_t<X>(0), x);
}
/// alpha * x for a number alpha.
template <typename S, OpLike X>
  requires std::is_arithmetic_v<S>
Expr<op_value_t<X>> scalarproduct(S alpha, const X& x) {
  return detail::unary(UnaryOp::Scale, static_cast<op_value_t<X>>(alpha), x);
}
/// alpha * x (same as scalarproduct).
template <typename S, OpLike X>
  requires std::is_arithmetic_v<S>
Expr<op_value_t<X>> mul(S alpha, const X& x) {
  return scalarproduct(alpha, x);
}
/// x + c for a number c.
template <OpLike X, typename S>
  requires std::is_arithmetic_v<S>
Expr<op_value_t<X>> add_scalar(const X& x, S c) {
  return detail::unary(UnaryOp::AddScalar, static_cast<op_value_t<X>>(c), x);
}
/// x^p elementwise for a number p (`op::pow(x, 2)`).
template <OpLike X, typename S>
  requires std::is_arithmetic_v<S>
Expr<op_value_t<X>> pow(const X& x, S p) {
  return detail::unary(UnaryOp::Pow, static_cast<op_value_t<X>>(p), x);
}
/// e^x.
template <OpLike X>
Expr<op_value_t<X>> exp(const X& x) {
  return detail::unary(UnaryOp::Exp, op_value_t<X>(0), x);
}
/// Natural logarithm.
template <OpLike X>
Expr<op_value_t<X>> log(const X& x) {
  return detail::unary(UnaryOp::Log, op_value_t<X>(0), x);
}

/// Sum of n inputs (broadcast to one shape): `op::sum({a, b, c})` or a vector.
template <OpLike X>
Expr<op_value_t<X>> add_n(const std::vector<X>& xs) {
  using T = op_value_t<X>;
  std::vector<OpPtr<T>> nodes;
  nodes.reserve(xs.size());
  for (const auto& x : xs) nodes.push_back(to_node(x));
  return make_expr<T>(std::make_shared<AddNNode<T>>(std::move(nodes)));
}
template <OpLike X>
Expr<op_value_t<X>> sum(const std::vector<X>& xs) {
  return add_n(xs);
}
template <typename T>
Expr<T> sum(std::initializer_list<Expr<T>> xs) {
  return add_n(std::vector<Expr<T>>(xs));
}
template <typename T>
Expr<T> add_n(std::initializer_list<Expr<T>> xs) {
  return add_n(std::vector<Expr<T>>(xs));
}

}  // namespace magmadnn::op
