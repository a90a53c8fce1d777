// Elementwise kernels: unary, unary_backward, binary (with broadcasting), axpy, axpby.
// Each op is selected once, outside its loop, so every loop body is a single
// branch-free expression the compiler can vectorise.
#include <cmath>
#include <cstring>

#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/backend/index_plan.h"
#include "magmadnn/backend/scalar_ops.h"

namespace magmadnn::cpu {
namespace {

// Transcendental ops cost tens of cycles per element, so they are worth
// threading at a smaller size than a plain add.
constexpr std::int64_t kCheapThreshold = kParallelThreshold;
constexpr std::int64_t kCostlyThreshold = kParallelThreshold / 8;

template <typename F>
inline void for_n(std::int64_t n, std::int64_t threshold, F f) {
  if (n > threshold) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) f(i);
  } else {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) f(i);
  }
}

template <typename T, typename F>
inline void map1(const T* x, T* y, std::int64_t n, std::int64_t threshold, F f) {
  for_n(n, threshold, [=](std::int64_t i) { y[i] = f(x[i]); });
}

// dx[i] = dy[i] * g(v[i]), where v is x or y depending on the op.
template <typename T, typename F>
inline void map_grad(const T* v, const T* dy, T* dx, std::int64_t n, std::int64_t threshold, F g) {
  for_n(n, threshold, [=](std::int64_t i) { dx[i] = dy[i] * g(v[i]); });
}

template <BinaryOp OP, typename T>
inline T bop(T a, T b) {
  if constexpr (OP == BinaryOp::Add) return a + b;
  else if constexpr (OP == BinaryOp::Sub) return a - b;
  else if constexpr (OP == BinaryOp::Mul) return a * b;
  else if constexpr (OP == BinaryOp::Div) return a / b;
  else if constexpr (OP == BinaryOp::Pow) return std::pow(a, b);
  else if constexpr (OP == BinaryOp::Max) return a > b ? a : b;
  else return a < b ? a : b;
}

template <BinaryOp OP, typename T>
void binary_impl(const T* a, const T* b, T* out, const BroadcastDesc& d) {
  const std::int64_t n = d.numel();
  if (n == 0) return;
  const bool cost = OP == BinaryOp::Pow;
  const std::int64_t threshold = cost ? kCostlyThreshold : kCheapThreshold;
  const bool a_dense = index_plan::is_dense(d.a_strides, d);
  const bool b_dense = index_plan::is_dense(d.b_strides, d);

  if (a_dense && b_dense) {
    for_n(n, threshold, [=](std::int64_t i) { out[i] = bop<OP>(a[i], b[i]); });
    return;
  }
  if (a_dense && index_plan::is_scalar(d.b_strides, d)) {
    const T s = b[0];
    for_n(n, threshold, [=](std::int64_t i) { out[i] = bop<OP>(a[i], s); });
    return;
  }
  if (b_dense && index_plan::is_scalar(d.a_strides, d)) {
    const T s = a[0];
    for_n(n, threshold, [=](std::int64_t i) { out[i] = bop<OP>(s, b[i]); });
    return;
  }
  const std::int64_t cols = d.ndim > 0 ? d.shape[d.ndim - 1] : 1;
  const std::int64_t rows = n / cols;
  if (a_dense && index_plan::is_row(d.b_strides, d)) {
    parallel_for(rows, n > threshold, [=](std::int64_t r) {
      const T* ar = a + r * cols;
      T* o = out + r * cols;
#pragma omp simd
      for (std::int64_t j = 0; j < cols; ++j) o[j] = bop<OP>(ar[j], b[j]);
    });
    return;
  }

  // General case: one row of the last axis at a time, with each operand's
  // start found from the row's multi-index and its own last-axis stride.
  const int nd = d.ndim;
  const std::int64_t sa = d.a_strides[nd - 1], sb = d.b_strides[nd - 1];
  parallel_for(rows, n > threshold, [=, &d](std::int64_t r) {
    std::int64_t rem = r, oa = 0, ob = 0;
    for (int ax = nd - 2; ax >= 0; --ax) {
      const std::int64_t idx = rem % d.shape[ax];
      rem /= d.shape[ax];
      oa += idx * d.a_strides[ax];
      ob += idx * d.b_strides[ax];
    }
    const T* ar = a + oa;
    const T* br = b + ob;
    T* o = out + r * cols;
    if (sa == 1 && sb == 0) {
      const T s = br[0];
#pragma omp simd
      for (std::int64_t j = 0; j < cols; ++j) o[j] = bop<OP>(ar[j], s);
    } else if (sa == 0 && sb == 1) {
      const T s = ar[0];
#pragma omp simd
      for (std::int64_t j = 0; j < cols; ++j) o[j] = bop<OP>(s, br[j]);
    } else {
      for (std::int64_t j = 0; j < cols; ++j) o[j] = bop<OP>(ar[j * sa], br[j * sb]);
    }
  });
}

}  // namespace

template <typename T>
void CpuKernels<T>::unary(UnaryOp op, const T* x, T* y, std::int64_t n, T p) {
  if (n <= 0) return;
  constexpr std::int64_t c = kCheapThreshold, e = kCostlyThreshold;
  switch (op) {
    case UnaryOp::Identity:
      if (x != y) std::memmove(y, x, static_cast<std::size_t>(n) * sizeof(T));
      return;
    case UnaryOp::Neg: map1(x, y, n, c, [](T v) { return -v; }); return;
    case UnaryOp::Exp: map1(x, y, n, e, [](T v) { return std::exp(v); }); return;
    case UnaryOp::Log: map1(x, y, n, e, [](T v) { return std::log(v); }); return;
    case UnaryOp::Sigmoid: map1(x, y, n, e, [](T v) { return ::magmadnn::ops::sigmoid(v); }); return;
    case UnaryOp::Relu: map1(x, y, n, c, [](T v) { return v > T(0) ? v : T(0); }); return;
    case UnaryOp::Tanh: map1(x, y, n, e, [](T v) { return std::tanh(v); }); return;
    case UnaryOp::Abs: map1(x, y, n, c, [](T v) { return std::abs(v); }); return;
    case UnaryOp::Sqrt: map1(x, y, n, c, [](T v) { return std::sqrt(v); }); return;
    case UnaryOp::Square: map1(x, y, n, c, [](T v) { return v * v; }); return;
    case UnaryOp::Reciprocal: map1(x, y, n, c, [](T v) { return T(1) / v; }); return;
    case UnaryOp::Pow: map1(x, y, n, e, [p](T v) { return std::pow(v, p); }); return;
    case UnaryOp::Scale: map1(x, y, n, c, [p](T v) { return v * p; }); return;
    case UnaryOp::AddScalar: map1(x, y, n, c, [p](T v) { return v + p; }); return;
    case UnaryOp::LeakyRelu: map1(x, y, n, c, [p](T v) { return v > T(0) ? v : p * v; }); return;
    case UnaryOp::Gelu: map1(x, y, n, e, [](T v) { return ::magmadnn::ops::gelu(v); }); return;
    case UnaryOp::Softplus: map1(x, y, n, e, [](T v) { return ::magmadnn::ops::softplus(v); }); return;
  }
}

// Sigmoid, Tanh and Exp differentiate from y (no transcendental call); every
// other op reads x only, so callers may pass y = nullptr for them.
template <typename T>
void CpuKernels<T>::unary_backward(UnaryOp op, const T* x, const T* y, const T* dy, T* dx, std::int64_t n, T p) {
  if (n <= 0) return;
  constexpr std::int64_t c = kCheapThreshold, e = kCostlyThreshold;
  switch (op) {
    case UnaryOp::Identity:
    case UnaryOp::AddScalar:
      if (dx != dy) std::memmove(dx, dy, static_cast<std::size_t>(n) * sizeof(T));
      return;
    case UnaryOp::Neg: map1(dy, dx, n, c, [](T g) { return -g; }); return;
    case UnaryOp::Scale: map1(dy, dx, n, c, [p](T g) { return g * p; }); return;
    case UnaryOp::Exp: map_grad(y, dy, dx, n, c, [](T v) { return v; }); return;
    case UnaryOp::Sigmoid: map_grad(y, dy, dx, n, c, [](T v) { return v * (T(1) - v); }); return;
    case UnaryOp::Tanh: map_grad(y, dy, dx, n, c, [](T v) { return T(1) - v * v; }); return;
    case UnaryOp::Log: map_grad(x, dy, dx, n, c, [](T v) { return T(1) / v; }); return;
    // Relu'(0) = 0, as in PyTorch: a unit exactly at the kink gets no gradient.
    case UnaryOp::Relu: map_grad(x, dy, dx, n, c, [](T v) { return v > T(0) ? T(1) : T(0); }); return;
    case UnaryOp::Abs:
      map_grad(x, dy, dx, n, c, [](T v) { return v > T(0) ? T(1) : (v < T(0) ? T(-1) : T(0)); });
      return;
    case UnaryOp::Sqrt: map_grad(x, dy, dx, n, e, [](T v) { return T(0.5) / std::sqrt(v); }); return;
    case UnaryOp::Square: map_grad(x, dy, dx, n, c, [](T v) { return T(2) * v; }); return;
    case UnaryOp::Reciprocal: map_grad(x, dy, dx, n, c, [](T v) { return T(-1) / (v * v); }); return;
    case UnaryOp::Pow: map_grad(x, dy, dx, n, e, [p](T v) { return p * std::pow(v, p - T(1)); }); return;
    case UnaryOp::LeakyRelu: map_grad(x, dy, dx, n, c, [p](T v) { return v > T(0) ? T(1) : p; }); return;
    case UnaryOp::Gelu: map_grad(x, dy, dx, n, e, [](T v) { return ::magmadnn::ops::gelu_grad(v); }); return;
    case UnaryOp::Softplus: map_grad(x, dy, dx, n, e, [](T v) { return ::magmadnn::ops::sigmoid(v); }); return;
  }
}

template <typename T>
void CpuKernels<T>::binary(BinaryOp op, const T* a, const T* b, T* out, const BroadcastDesc& d) {
  switch (op) {
    case BinaryOp::Add: binary_impl<BinaryOp::Add>(a, b, out, d); return;
    case BinaryOp::Sub: binary_impl<BinaryOp::Sub>(a, b, out, d); return;
    case BinaryOp::Mul: binary_impl<BinaryOp::Mul>(a, b, out, d); return;
    case BinaryOp::Div: binary_impl<BinaryOp::Div>(a, b, out, d); return;
    case BinaryOp::Pow: binary_impl<BinaryOp::Pow>(a, b, out, d); return;
    case BinaryOp::Max: binary_impl<BinaryOp::Max>(a, b, out, d); return;
    case BinaryOp::Min: binary_impl<BinaryOp::Min>(a, b, out, d); return;
  }
}

template <typename T>
void CpuKernels<T>::axpy(std::int64_t n, T alpha, const T* x, T* y) {
  for_n(n, kCheapThreshold, [=](std::int64_t i) { y[i] += alpha * x[i]; });
}

template <typename T>
void CpuKernels<T>::axpby(std::int64_t n, T alpha, const T* x, T beta, T* y) {
  for_n(n, kCheapThreshold, [=](std::int64_t i) { y[i] = alpha * x[i] + beta * y[i]; });
}

template void CpuKernels<float>::unary(UnaryOp, const float*, float*, std::int64_t, float);
template void CpuKernels<double>::unary(UnaryOp, const double*, double*, std::int64_t, double);
template void CpuKernels<float>::unary_backward(UnaryOp, const float*, const float*, const float*, float*,
                                                std::int64_t, float);
template void CpuKernels<double>::unary_backward(UnaryOp, const double*, const double*, const double*, double*,
                                                 std::int64_t, double);
template void CpuKernels<float>::binary(BinaryOp, const float*, const float*, float*, const BroadcastDesc&);
template void CpuKernels<double>::binary(BinaryOp, const double*, const double*, double*, const BroadcastDesc&);
template void CpuKernels<float>::axpy(std::int64_t, float, const float*, float*);
template void CpuKernels<double>::axpy(std::int64_t, double, const double*, double*);
template void CpuKernels<float>::axpby(std::int64_t, float, const float*, float, float*);
template void CpuKernels<double>::axpby(std::int64_t, double, const double*, double, double*);

}  // namespace magmadnn::cpu
