/// @file unary_dispatch.h
/// with_unary_op: turns a run-time UnaryOp into a compile-time one.
///
/// Why: the CPU loops take their formulas from `scalar_ops.h`, whose
/// `ops::unary` and `ops::unary_grad` switch on the op. Called with an op
/// known at compile time, the switch folds away and the loop body is the op's
/// formula alone, which the compiler vectorises; a run-time op would leave a
/// switch in every iteration. So a kernel chooses once, here, outside its
/// loop, and the loop itself is written once for every op.
///
/// Guarantees: `f` is called exactly once, with
/// `std::integral_constant<UnaryOp, op>` (read the op as `decltype(c)::value`),
/// and with no call for a value outside the enumeration. A UnaryOp added
/// without a case here is a -Wswitch warning.
#pragma once

#include <type_traits>

#include "magmadnn/backend/kernels.h"

namespace magmadnn::cpu {

template <UnaryOp OP>
using UnaryOpConstant = std::integral_constant<UnaryOp, OP>;

template <typename F>
inline void with_unary_op(UnaryOp op, F&& f) {
  switch (op) {
    case UnaryOp::Identity: f(UnaryOpConstant<UnaryOp::Identity>{}); return;
    case UnaryOp::Neg: f(UnaryOpConstant<UnaryOp::Neg>{}); return;
    case UnaryOp::Exp: f(UnaryOpConstant<UnaryOp::Exp>{}); return;
    case UnaryOp::Log: f(UnaryOpConstant<UnaryOp::Log>{}); return;
    case UnaryOp::Sigmoid: f(UnaryOpConstant<UnaryOp::Sigmoid>{}); return;
    case UnaryOp::Relu: f(UnaryOpConstant<UnaryOp::Relu>{}); return;
    case UnaryOp::Tanh: f(UnaryOpConstant<UnaryOp::Tanh>{}); return;
    case UnaryOp::Abs: f(UnaryOpConstant<UnaryOp::Abs>{}); return;
    case UnaryOp::Sqrt: f(UnaryOpConstant<UnaryOp::Sqrt>{}); return;
    case UnaryOp::Square: f(UnaryOpConstant<UnaryOp::Square>{}); return;
    case UnaryOp::Reciprocal: f(UnaryOpConstant<UnaryOp::Reciprocal>{}); return;
    case UnaryOp::Pow: f(UnaryOpConstant<UnaryOp::Pow>{}); return;
    case UnaryOp::Scale: f(UnaryOpConstant<UnaryOp::Scale>{}); return;
    case UnaryOp::AddScalar: f(UnaryOpConstant<UnaryOp::AddScalar>{}); return;
    case UnaryOp::LeakyRelu: f(UnaryOpConstant<UnaryOp::LeakyRelu>{}); return;
    case UnaryOp::Gelu: f(UnaryOpConstant<UnaryOp::Gelu>{}); return;
    case UnaryOp::Softplus: f(UnaryOpConstant<UnaryOp::Softplus>{}); return;
  }
}

}  // namespace magmadnn::cpu
