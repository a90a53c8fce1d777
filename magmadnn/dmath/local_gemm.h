/// @file local_gemm.h
/// One rank's share of a distributed GEMM: the library's host GEMM
/// (CpuKernels<T>::gemm: oneDNN for float, OpenBLAS for double, both
/// threaded by OpenMP). Distributed blocks are often empty (a rank holding
/// no rows) or one column wide, so leading dimensions are clamped to 1 as
/// BLAS demands. Internal to dmath.
#pragma once

#include <algorithm>
#include <cstdint>

#include "magmadnn/backend/cpu/cpu_kernels.h"

namespace magmadnn::distributed::dmath::detail {

/// Row-major C = alpha * op(A) * op(B) + beta * C (op(A) m x k, op(B) k x n);
/// beta == 0 writes C without reading it.
template <typename T>
void local_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* A,
                std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
  cpu::CpuKernels<T>().gemm(ta, tb, m, n, k, alpha, A, std::max<std::int64_t>(lda, 1), B, std::max<std::int64_t>(ldb, 1), beta,
               C, std::max<std::int64_t>(ldc, 1));
}

/// C = beta * C over a dense m x n matrix (beta == 0 writes zeros).
template <typename T>
void scale(T* C, std::int64_t count, T beta) {
  if (beta == T(1)) return;
  if (beta == T(0)) std::fill_n(C, count, T(0));
  else
    for (std::int64_t i = 0; i < count; ++i) C[i] *= beta;
}

}  // namespace magmadnn::distributed::dmath::detail
