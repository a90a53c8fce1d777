/// @file unary_op_table.h
/// The op table: one row per UnaryOp saying what the op is, so that every
/// list of ops in the library and its tests is read from here rather than
/// spelled again: names (messages, layer and config names), which ops are
/// activations (layers, the command line, math::linear), what a derivative
/// reads (the kernels, and which activations a linear node can absorb), and
/// where a GEMM applies the op itself (oneDNN post-op, cuBLASLt epilogue).
///
/// Guarantees: row i describes UnaryOp(i), for every value of the enum
/// (checked at compile time), so indexing by an op never goes out of bounds;
/// names are unique, lower case and fit in identifiers.
/// Tests loop over kUnaryOpTable (as ggml's test-backend-ops loops over its
/// ops), so a new row is tested without new test code: docs/adding_an_op.md.
///
/// The table is host data; device code reads nothing from it (kernels take
/// the op as an argument and switch in scalar_ops.h).
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "magmadnn/backend/kernels.h"

namespace magmadnn {

/// Where f(x; p) is defined (and, kinks aside, differentiable): what inputs
/// tests draw for it.
enum class Domain : std::uint8_t {
  Real,      ///< every x
  Positive,  ///< x > 0
  NonZero,   ///< x != 0
};

/// What unary_backward needs to compute f'(x; p).
enum class GradFrom : std::uint8_t {
  X,       ///< x; the kernels read x only
  Y,       ///< y = f(x; p); the kernels read y only (no transcendental call)
  Either,  ///< the kernels read x, and y in its place gives the same result
           ///< (a constant derivative, or relu's, which depends on x > 0 alone)
};

struct UnaryOpInfo {
  UnaryOp op;
  const char* name;   ///< lower case: messages, graph node kinds, layer and config names
  const char* param;  ///< what p means ("exponent", ...), or nullptr when the op ignores p
  Domain domain;
  GradFrom grad;
  bool activation;     ///< offered as a layer activation and by name in configs
  bool cpu_epilogue;   ///< float gemm_bias_act applies it as a oneDNN post-op (cpu_gemm.cpp)
  bool cuda_epilogue;  ///< gemm_bias_act applies it in the cuBLASLt epilogue (cuda_gemm.cpp)
};

// clang-format off
inline constexpr std::array<UnaryOpInfo, kUnaryOpCount> kUnaryOpTable = {{
//  op                   name          param       domain            grad              activation cpu    cuda
  {UnaryOp::Identity,   "identity",   nullptr,    Domain::Real,     GradFrom::Either, false,     true,  true},
  {UnaryOp::Neg,        "neg",        nullptr,    Domain::Real,     GradFrom::Either, false,     false, false},
  {UnaryOp::Exp,        "exp",        nullptr,    Domain::Real,     GradFrom::Y,      false,     false, false},
  {UnaryOp::Log,        "log",        nullptr,    Domain::Positive, GradFrom::X,      false,     false, false},
  {UnaryOp::Sigmoid,    "sigmoid",    nullptr,    Domain::Real,     GradFrom::Y,      true,      true,  false},
  {UnaryOp::Relu,       "relu",       nullptr,    Domain::Real,     GradFrom::Either, true,      true,  true},
  {UnaryOp::Tanh,       "tanh",       nullptr,    Domain::Real,     GradFrom::Y,      true,      true,  false},
  {UnaryOp::Abs,        "abs",        nullptr,    Domain::Real,     GradFrom::X,      false,     false, false},
  {UnaryOp::Sqrt,       "sqrt",       nullptr,    Domain::Positive, GradFrom::X,      false,     false, false},
  {UnaryOp::Square,     "square",     nullptr,    Domain::Real,     GradFrom::X,      false,     false, false},
  {UnaryOp::Reciprocal, "reciprocal", nullptr,    Domain::NonZero,  GradFrom::X,      false,     false, false},
  {UnaryOp::Pow,        "pow",        "exponent", Domain::Positive, GradFrom::X,      false,     false, false},
  {UnaryOp::Scale,      "scale",      "factor",   Domain::Real,     GradFrom::Either, false,     false, false},
  {UnaryOp::AddScalar,  "add_scalar", "addend",   Domain::Real,     GradFrom::Either, false,     false, false},
  {UnaryOp::LeakyRelu,  "leaky_relu", "slope",    Domain::Real,     GradFrom::X,      true,      true,  false},
  {UnaryOp::Gelu,       "gelu",       nullptr,    Domain::Real,     GradFrom::X,      true,      true,  false},
  {UnaryOp::Softplus,   "softplus",   nullptr,    Domain::Real,     GradFrom::X,      true,      false, false},
}};
// clang-format on
// Why some cells are what they are:
//  - Identity "fuses" everywhere: the bias is part of every GEMM epilogue.
//  - LeakyRelu reads x: with a negative slope y's sign is not x's.
//  - cuBLASLt's GELU epilogue is the tanh approximation while scalar_ops.h
//    computes the exact erf form, so CUDA applies Gelu in its own pass.
//    cuBLASLt has no sigmoid, tanh or softplus epilogue at all.
//  - oneDNN's soft_relu might serve softplus on the CPU; not measured or
//    compared yet, so softplus runs in the pass after the product.

namespace detail {
constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < kUnaryOpTable.size(); ++i) {
    if (static_cast<std::size_t>(kUnaryOpTable[i].op) != i || kUnaryOpTable[i].name == nullptr) return false;
  }
  return true;
}
}  // namespace detail
static_assert(detail::rows_in_enum_order(),
              "kUnaryOpTable: row i must describe UnaryOp(i), one row per op (see kUnaryOpCount)");

/// The row of `op`. A value outside the enum (only a cast makes one) throws ValueError.
const UnaryOpInfo& unary_op_info(UnaryOp op);

/// f'(x) is computed from y = f(x): unary_backward reads y, not x.
inline bool grad_reads_y(UnaryOp op) { return unary_op_info(op).grad == GradFrom::Y; }

/// f'(x) can be had from y alone (GradFrom::Y or Either): a node that keeps
/// only its output, such as a linear node with a fused activation, can
/// differentiate it.
inline bool grad_from_output(UnaryOp op) { return unary_op_info(op).grad != GradFrom::X; }

/// The names of the rows for which `keep` holds, comma separated, in table
/// order ("sigmoid, relu, ..."): for messages that list what is accepted.
std::string unary_op_names(bool (*keep)(const UnaryOpInfo&));

}  // namespace magmadnn
