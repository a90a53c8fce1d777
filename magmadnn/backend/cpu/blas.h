/// @file blas.h
/// Direct OpenBLAS matrix products on the host, outside the Kernels<T>
/// interface: the CPU backend uses them for double (oneDNN 2.6 has no f64
/// matmul), and bench/ uses them as the GEMM floor to compare oneDNN against.
#pragma once

#include <cstdint>

namespace magmadnn::cpu {

/// Row-major C = alpha * op(A) * op(B) + beta * C through cblas_?gemm, with
/// the same argument conventions as Kernels<T>::gemm. Throws ValueError when a
/// size does not fit OpenBLAS's 32-bit integers.
void blas_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
               const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
               std::int64_t ldc);
void blas_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
               const double* A, std::int64_t lda, const double* B, std::int64_t ldb, double beta, double* C,
               std::int64_t ldc);

}  // namespace magmadnn::cpu
