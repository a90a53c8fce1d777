/// @file cpu_unary_ops.h
/// Scalar forms of the UnaryOps, shared by the elementwise kernels and the
/// fused bias + activation pass of the OpenBLAS gemm path, so both compute
/// bit-identical activations.
#pragma once

#include <algorithm>
#include <cmath>

#include "magmadnn/backend/kernels.h"

namespace magmadnn::cpu::ops {

template <typename T>
inline constexpr T kInvSqrt2 = T(0.70710678118654752440084436210485);
template <typename T>
inline constexpr T kInvSqrt2Pi = T(0.39894228040143267793994605993438);

// Branching on the sign keeps exp() from overflowing in either tail.
template <typename T>
inline T sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}

// Exact (erf) GELU, as in the oneDNN eltwise_gelu_erf post-op.
template <typename T>
inline T gelu(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * kInvSqrt2<T>));
}

template <typename T>
inline T gelu_grad(T x) {
  const T cdf = T(0.5) * (T(1) + std::erf(x * kInvSqrt2<T>));
  const T pdf = kInvSqrt2Pi<T> * std::exp(T(-0.5) * x * x);
  return cdf + x * pdf;
}

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large x, no loss
// of precision for very negative x.
template <typename T>
inline T softplus(T x) {
  return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x)));
}

/// f(x; p) for every UnaryOp. Used where the op is not known at compile time
/// of the loop (the fused gemm epilogue); the elementwise kernels switch on the
/// op outside their loops instead.
template <typename T>
inline T apply(UnaryOp op, T x, T p) {
  switch (op) {
    case UnaryOp::Identity: return x;
    case UnaryOp::Neg: return -x;
    case UnaryOp::Exp: return std::exp(x);
    case UnaryOp::Log: return std::log(x);
    case UnaryOp::Sigmoid: return sigmoid(x);
    case UnaryOp::Relu: return x > T(0) ? x : T(0);
    case UnaryOp::Tanh: return std::tanh(x);
    case UnaryOp::Abs: return std::abs(x);
    case UnaryOp::Sqrt: return std::sqrt(x);
    case UnaryOp::Square: return x * x;
    case UnaryOp::Reciprocal: return T(1) / x;
    case UnaryOp::Pow: return std::pow(x, p);
    case UnaryOp::Scale: return x * p;
    case UnaryOp::AddScalar: return x + p;
    case UnaryOp::LeakyRelu: return x > T(0) ? x : p * x;
    case UnaryOp::Gelu: return gelu(x);
    case UnaryOp::Softplus: return softplus(x);
  }
  return x;
}

}  // namespace magmadnn::cpu::ops
