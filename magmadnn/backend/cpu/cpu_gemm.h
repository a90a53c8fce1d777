/// @file cpu_gemm.h
/// CPU-only products beyond Kernels<T>::gemm, and introspection of the CPU
/// gemm path for tests and benchmarks.
#pragma once

#include <cstddef>
#include <cstdint>

namespace magmadnn::cpu {

/// Number of oneDNN matmul primitives created so far (one per distinct float
/// problem); a repeated product must not add one.
std::size_t onednn_matmul_cache_size();

/// How a float product C = alpha op(A) op(B) + beta C with beta other than 0
/// and 1, repeated with the same beta (SGD with weight decay folds
/// 1 - lr * decay into beta), applies beta: Measure (default) times both
/// ways once per problem and keeps the faster; SumPostOp compiles beta into
/// the primitive (oneDNN's `sum` post-op); ScalePass scales C in a pass of
/// its own before the beta = 1 primitive. All three give the same values up
/// to rounding. Under deterministic_algorithms() (core/determinism.h)
/// Measure takes ScalePass without timing. The setting is process-wide, for
/// tests and benchmarks.
enum class GemmBetaPath { Measure, SumPostOp, ScalePass };
void set_gemm_beta_path(GemmBetaPath path);

/// How many problems the Measure policy has timed so far (each at most once).
std::size_t gemm_beta_measurements();

/// Whether oneDNN computes bf16 matmuls natively on this CPU (it needs
/// AVX-512). Where it does not, Kernels<float>::gemm_mixed and
/// gemm_bias_act_mixed widen bf16 operands to float and run the float
/// product: the same result as bf16 multiplies with float accumulation
/// (every bf16 value is a float), without the speed.
bool bf16_matmul_native();

/// For i < batch: C_i = alpha * op(A_i) * op(B_i) + beta * C_i, where
/// A_i = A + i * stride_a (likewise B_i, C_i) and each product has
/// Kernels<T>::gemm's row-major conventions.
///
/// Why: many small products of one shape (Winograd's alpha^2 positions) run
/// faster as one oneDNN batched matmul, which spreads the batch over the
/// threads, than as a sequence of products each too small to thread well.
/// float batches go to oneDNN; double (which oneDNN 2.6 lacks) and tiny
/// products loop over Kernels<T>::gemm. Throws ValueError if batch < 0.
void gemm_strided_batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                          const float* A, std::int64_t lda, std::int64_t stride_a, const float* B, std::int64_t ldb,
                          std::int64_t stride_b, float beta, float* C, std::int64_t ldc, std::int64_t stride_c,
                          std::int64_t batch);
void gemm_strided_batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
                          const double* A, std::int64_t lda, std::int64_t stride_a, const double* B, std::int64_t ldb,
                          std::int64_t stride_b, double beta, double* C, std::int64_t ldc, std::int64_t stride_c,
                          std::int64_t batch);

}  // namespace magmadnn::cpu
