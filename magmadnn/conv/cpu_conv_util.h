/// @file cpu_conv_util.h
/// Internal helpers shared by the CPU convolution algorithms: the GEMM they
/// all use, bias and bias-gradient passes, and the static registrar.
#pragma once

#include <cstdint>
#include <memory>

#include "magmadnn/backend/registry.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/conv/algorithm.h"

namespace magmadnn::conv::cpu_detail {

/// Row-major C = alpha op(A) op(B) + beta C on the host (oneDNN for float,
/// OpenBLAS for double, both threaded internally).
template <typename T>
inline void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* A,
                 std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
  kernels<T>(cpu_backend()).gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/// Threads pay off above roughly this many scalar operations per loop.
inline constexpr std::int64_t kParallelWork = 1 << 15;

/// y[n, k, :, :] += bias[k].
template <typename T>
void add_bias(const ConvProblem& pr, const T* bias, T* y) {
  if (!bias) return;
  const std::int64_t plane = pr.p * pr.q;
  magmadnn::cpu::parallel_for(pr.n * pr.k, pr.n * pr.k * plane > kParallelWork, [&](std::int64_t i) {
    const T b = bias[i % pr.k];
    T* row = y + i * plane;
    for (std::int64_t j = 0; j < plane; ++j) row[j] += b;
  });
}

/// The sum of p[0, n) in double, in a fixed order (8 interleaved partial
/// sums, so that it vectorises, then a fixed tree): the same bits on every
/// run and thread count. Float and double (cpu_conv_util.cpp).
template <typename T>
double sum_in_double(const T* p, std::int64_t n);

/// db[k] = sum of dy over N, P, Q.
template <typename T>
void bias_grad(const ConvProblem& pr, const T* dy, T* db) {
  if (!db) return;
  const std::int64_t plane = pr.p * pr.q;
  magmadnn::cpu::parallel_for(pr.k, pr.n * pr.k * plane > kParallelWork, [&](std::int64_t k) {
    double acc = 0;
    for (std::int64_t n = 0; n < pr.n; ++n) acc += sum_in_double(dy + (n * pr.k + k) * plane, plane);
    db[k] = static_cast<T>(acc);
  });
}

/// bias_grad for dy in the channel-blocked layout of conv/layout.h
/// (pr.y_block channels to a block, which divides K).
template <typename T>
void bias_grad_blocked(const ConvProblem& pr, const T* dy, T* db) {
  if (!db) return;
  const std::int64_t plane = pr.p * pr.q, b = pr.y_block;
  magmadnn::cpu::parallel_for(pr.k, pr.n * pr.k * plane > kParallelWork, [&](std::int64_t k) {
    double acc = 0;
    for (std::int64_t n = 0; n < pr.n; ++n) {
      const T* p = dy + (n * (pr.k / b) + k / b) * plane * b + k % b;
      for (std::int64_t i = 0; i < plane; ++i) acc += static_cast<double>(p[i * b]);
    }
    db[k] = static_cast<T>(acc);
  });
}

/// Registers Algorithm<float> and Algorithm<double> at load time.
template <template <typename> class Algorithm>
struct Registrar {
  Registrar() {
    detail::register_algorithm<float>(std::make_unique<Algorithm<float>>());
    detail::register_algorithm<double>(std::make_unique<Algorithm<double>>());
  }
};

/// Bytes rounded up to a cache line, so that sub-buffers carved out of one
/// workspace stay 64-byte aligned.
inline std::size_t align64(std::size_t b) { return (b + 63) / 64 * 64; }

}  // namespace magmadnn::conv::cpu_detail
