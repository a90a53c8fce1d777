// Elementwise kernels: unary, unary_backward, binary (with broadcasting), axpy, axpby.
// The formulas are scalar_ops.h's, the same the CUDA kernels run. Each op is
// selected once, outside its loop, as a compile-time constant
// (with_unary_op, binary's switch), so the formula's own switch folds away
// and each loop body is that op's formula alone, which the compiler
// vectorises wherever the formula allows.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "magmadnn/backend/cpu/cpu_bf16.h"
#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/backend/cpu/unary_dispatch.h"
#include "magmadnn/backend/index_plan.h"
#include "magmadnn/backend/scalar_ops.h"
#include "magmadnn/backend/unary_op_table.h"

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

// Ops whose formula calls a transcendental function (or pow, or a square
// root and a division in the derivative) in the direction named.
constexpr bool costly_forward(UnaryOp op) {
  return op == UnaryOp::Exp || op == UnaryOp::Log || op == UnaryOp::Sigmoid || op == UnaryOp::Tanh ||
         op == UnaryOp::Pow || op == UnaryOp::Gelu || op == UnaryOp::Softplus;
}
constexpr bool costly_backward(UnaryOp op) {
  return op == UnaryOp::Sqrt || op == UnaryOp::Pow || op == UnaryOp::Gelu || op == UnaryOp::Softplus;
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
    for_n(n, threshold, [=](std::int64_t i) { out[i] = ops::binary(OP, a[i], b[i]); });
    return;
  }
  if (a_dense && index_plan::is_scalar(d.b_strides, d)) {
    const T s = b[0];
    for_n(n, threshold, [=](std::int64_t i) { out[i] = ops::binary(OP, a[i], s); });
    return;
  }
  if (b_dense && index_plan::is_scalar(d.a_strides, d)) {
    const T s = a[0];
    for_n(n, threshold, [=](std::int64_t i) { out[i] = ops::binary(OP, s, b[i]); });
    return;
  }
  const std::int64_t cols = d.ndim > 0 ? d.shape[d.ndim - 1] : 1;
  const std::int64_t rows = n / cols;
  if (a_dense && index_plan::is_row(d.b_strides, d)) {
    parallel_for(rows, n > threshold, [=](std::int64_t r) {
      const T* ar = a + r * cols;
      T* o = out + r * cols;
#pragma omp simd
      for (std::int64_t j = 0; j < cols; ++j) o[j] = ops::binary(OP, ar[j], b[j]);
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
      for (std::int64_t j = 0; j < cols; ++j) o[j] = ops::binary(OP, ar[j], s);
    } else if (sa == 0 && sb == 1) {
      const T s = ar[0];
#pragma omp simd
      for (std::int64_t j = 0; j < cols; ++j) o[j] = ops::binary(OP, s, br[j]);
    } else {
      for (std::int64_t j = 0; j < cols; ++j) o[j] = ops::binary(OP, ar[j * sa], br[j * sb]);
    }
  });
}

}  // namespace

template <typename T>
void CpuKernels<T>::unary(UnaryOp op, const T* x, T* y, std::int64_t n, T p) {
  if (n <= 0) return;
  with_unary_op(op, [=](auto c) {
    constexpr UnaryOp OP = decltype(c)::value;
    if constexpr (OP == UnaryOp::Identity) {
      if (x != y) std::memmove(y, x, static_cast<std::size_t>(n) * sizeof(T));
    } else {
      for_n(n, costly_forward(OP) ? kCostlyThreshold : kCheapThreshold,
            [=](std::int64_t i) { y[i] = ops::unary(OP, x[i], p); });
    }
  });
}

// The op table says which input each derivative reads (y for those computed
// from the output, with no transcendental call); callers may pass
// y = nullptr for the others.
template <typename T>
void CpuKernels<T>::unary_backward(UnaryOp op, const T* x, const T* y, const T* dy, T* dx, std::int64_t n, T p) {
  if (n <= 0) return;
  const T* v = grad_reads_y(op) ? y : x;
  with_unary_op(op, [=](auto c) {
    constexpr UnaryOp OP = decltype(c)::value;
    if constexpr (OP == UnaryOp::Identity || OP == UnaryOp::AddScalar) {
      if (dx != dy) std::memmove(dx, dy, static_cast<std::size_t>(n) * sizeof(T));
    } else {
      for_n(n, costly_backward(OP) ? kCostlyThreshold : kCheapThreshold,
            [=](std::int64_t i) { dx[i] = ops::unary_grad(OP, v[i], dy[i], p); });
    }
  });
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

// One pass over memory in blocks that stay in L1: the block's update with
// axpby's own loop (so the same bits as axpby), then its rounding
// (round_to_bf16_serial: bfloat16(float)'s bits, as Backend::convert gives).
// The update is not folded into the rounding's vector clones: compiled for
// FMA, alpha * x + beta * y could contract and round differently from axpby.
template <typename T>
bool CpuKernels<T>::axpby_bf16(std::int64_t n, T alpha, const T* x, T beta, T* y, bfloat16* y16) {
  if constexpr (!std::is_same_v<T, float>) {
    return false;  // mixed precision keeps float masters only; math::axpby makes two passes
  } else {
    const std::int64_t blocks = (n + kBf16Block - 1) / kBf16Block;
    parallel_for(blocks, n > kCheapThreshold, [=](std::int64_t k) {
      const std::int64_t i0 = k * kBf16Block, len = std::min(kBf16Block, n - i0);
      float* yb = y + i0;
      const float* xb = x + i0;
#pragma omp simd
      for (std::int64_t i = 0; i < len; ++i) yb[i] = alpha * xb[i] + beta * yb[i];
      round_to_bf16_serial(yb, y16 + i0, len);
    });
    return true;
  }
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
template bool CpuKernels<float>::axpby_bf16(std::int64_t, float, const float*, float, float*, bfloat16*);
template bool CpuKernels<double>::axpby_bf16(std::int64_t, double, const double*, double, double*,
                                             bfloat16*);

}  // namespace magmadnn::cpu
