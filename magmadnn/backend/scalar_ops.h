/// @file scalar_ops.h
/// Scalar forms of every UnaryOp (value and derivative) and BinaryOp, shared
/// by the CPU and CUDA backends (MAGMADNN_HD), so both compute the same
/// formulas and the parity harness compares like with like: exact erf GELU,
/// sign-split sigmoid (no overflow in either tail), overflow-free softplus,
/// Relu'(0) = 0.
#pragma once

#include <math.h>

#include "magmadnn/backend/kernels.h"
#include "magmadnn/core/config.h"

namespace magmadnn::ops {

// The C math functions exist for host and device under these names; the
// overloads pick the float or double one.
MAGMADNN_HD inline float m_exp(float x) { return expf(x); }
MAGMADNN_HD inline double m_exp(double x) { return exp(x); }
MAGMADNN_HD inline float m_log(float x) { return logf(x); }
MAGMADNN_HD inline double m_log(double x) { return log(x); }
MAGMADNN_HD inline float m_log1p(float x) { return log1pf(x); }
MAGMADNN_HD inline double m_log1p(double x) { return log1p(x); }
MAGMADNN_HD inline float m_tanh(float x) { return tanhf(x); }
MAGMADNN_HD inline double m_tanh(double x) { return tanh(x); }
MAGMADNN_HD inline float m_sqrt(float x) { return sqrtf(x); }
MAGMADNN_HD inline double m_sqrt(double x) { return sqrt(x); }
MAGMADNN_HD inline float m_pow(float x, float y) { return powf(x, y); }
MAGMADNN_HD inline double m_pow(double x, double y) { return pow(x, y); }
MAGMADNN_HD inline float m_erf(float x) { return erff(x); }
MAGMADNN_HD inline double m_erf(double x) { return erf(x); }
MAGMADNN_HD inline float m_abs(float x) { return fabsf(x); }
MAGMADNN_HD inline double m_abs(double x) { return fabs(x); }

template <typename T>
MAGMADNN_HD inline T sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + m_exp(-x));
  const T e = m_exp(x);
  return e / (T(1) + e);
}

template <typename T>
MAGMADNN_HD inline T gelu(T x) {
  return T(0.5) * x * (T(1) + m_erf(x * T(0.70710678118654752440084436210485)));
}

template <typename T>
MAGMADNN_HD inline T gelu_grad(T x) {
  const T cdf = T(0.5) * (T(1) + m_erf(x * T(0.70710678118654752440084436210485)));
  const T pdf = T(0.39894228040143267793994605993438) * m_exp(T(-0.5) * x * x);
  return cdf + x * pdf;
}

template <typename T>
MAGMADNN_HD inline T softplus(T x) {
  return (x > T(0) ? x : T(0)) + m_log1p(m_exp(-m_abs(x)));
}

/// f(x; p).
template <typename T>
MAGMADNN_HD inline T unary(UnaryOp op, T x, T p) {
  switch (op) {
    case UnaryOp::Identity: return x;
    case UnaryOp::Neg: return -x;
    case UnaryOp::Exp: return m_exp(x);
    case UnaryOp::Log: return m_log(x);
    case UnaryOp::Sigmoid: return sigmoid(x);
    case UnaryOp::Relu: return x > T(0) ? x : T(0);
    case UnaryOp::Tanh: return m_tanh(x);
    case UnaryOp::Abs: return m_abs(x);
    case UnaryOp::Sqrt: return m_sqrt(x);
    case UnaryOp::Square: return x * x;
    case UnaryOp::Reciprocal: return T(1) / x;
    case UnaryOp::Pow: return m_pow(x, p);
    case UnaryOp::Scale: return x * p;
    case UnaryOp::AddScalar: return x + p;
    case UnaryOp::LeakyRelu: return x > T(0) ? x : p * x;
    case UnaryOp::Gelu: return gelu(x);
    case UnaryOp::Softplus: return softplus(x);
  }
  return x;
}

/// dx = dy * f'(x; p), given v = y for the ops whose op-table row says
/// GradFrom::Y (grad_reads_y in unary_op_table.h), else v = x.
template <typename T>
MAGMADNN_HD inline T unary_grad(UnaryOp op, T v, T dy, T p) {
  switch (op) {
    case UnaryOp::Identity:
    case UnaryOp::AddScalar: return dy;
    case UnaryOp::Neg: return -dy;
    case UnaryOp::Scale: return dy * p;
    case UnaryOp::Exp: return dy * v;
    case UnaryOp::Sigmoid: return dy * (v * (T(1) - v));
    case UnaryOp::Tanh: return dy * (T(1) - v * v);
    case UnaryOp::Log: return dy * (T(1) / v);
    case UnaryOp::Relu: return dy * (v > T(0) ? T(1) : T(0));
    case UnaryOp::Abs: return dy * (v > T(0) ? T(1) : (v < T(0) ? T(-1) : T(0)));
    case UnaryOp::Sqrt: return dy * (T(0.5) / m_sqrt(v));
    case UnaryOp::Square: return dy * (T(2) * v);
    case UnaryOp::Reciprocal: return dy * (T(-1) / (v * v));
    case UnaryOp::Pow: return dy * (p * m_pow(v, p - T(1)));
    case UnaryOp::LeakyRelu: return dy * (v > T(0) ? T(1) : p);
    case UnaryOp::Gelu: return dy * gelu_grad(v);
    case UnaryOp::Softplus: return dy * sigmoid(v);
  }
  return dy;
}

/// a (op) b.
template <typename T>
MAGMADNN_HD inline T binary(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return a / b;
    case BinaryOp::Pow: return m_pow(a, b);
    case BinaryOp::Max: return a > b ? a : b;
    case BinaryOp::Min: return a < b ? a : b;
  }
  return a;
}

}  // namespace magmadnn::ops
