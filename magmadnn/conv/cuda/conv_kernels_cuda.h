/// @file conv_kernels_cuda.h
/// Building blocks shared by the GPU convolution algorithms: patch unfolding
/// (im2col) and its adjoint (col2im), bias add and bias gradient, the filter
/// flip used for backward data through a forward convolution, and a
/// row-major strided-batched GEMM over cuBLAS. All are queued on `on.stream`;
/// pointers are device memory; T is float or double.
///
/// The column buffer of a block of `images` images is laid out
/// [image][c][r][s][p][q]: for image b and group g, the rows
/// (g*C/G .. (g+1)*C/G) * R*S form a dense (C/G*R*S) x (P*Q) matrix, which is
/// the right operand of that group's GEMM.
#pragma once

#include <cublas_v2.h>

#include <cstdint>

#include "magmadnn/conv/conv_params.h"
#include "magmadnn/conv/cuda/conv_context_cuda.h"

namespace magmadnn::conv::cuda {

/// col = unfold(x) for `images` images starting at x (zeros where a tap falls
/// in the padding).
template <typename T>
void im2col(const ConvProblem& pr, const T* x, std::int64_t images, T* col, const Launch& on);

/// dx = fold(col): every input element receives the sum of the column entries
/// that read it (a gather: no atomics, deterministic). Overwrites dx.
template <typename T>
void col2im(const ConvProblem& pr, const T* col, std::int64_t images, T* dx, const Launch& on);

/// y[n, k, :] += bias[k] for y {n, k, plane}.
template <typename T>
void add_bias(const T* bias, T* y, std::int64_t n, std::int64_t k, std::int64_t plane, const Launch& on);

/// db[k] = sum of dy[n, k, :] over n and the plane.
template <typename T>
void bias_grad(const T* dy, T* db, std::int64_t n, std::int64_t k, std::int64_t plane, const Launch& on);

/// wt {C, K/G, R, S} from w {K, C/G, R, S}: per group, the filter with
/// input and output channels swapped and both spatial axes reversed, so that
/// backward data of a stride-1 convolution is a forward convolution of dy
/// with wt and padding (R-1-pad_h, S-1-pad_w).
template <typename T>
void flip_filter(const ConvProblem& pr, const T* w, T* wt, const Launch& on);

/// Row-major C_i = alpha * op(A_i) op(B_i) + beta * C_i for i < batch, with
/// X_i = X + i * stride_X (stride 0 shares one matrix). m x n result, k inner.
template <typename T>
void gemm_batched(cublasHandle_t h, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                  T alpha, const T* A, std::int64_t lda, std::int64_t stride_a, const T* B, std::int64_t ldb,
                  std::int64_t stride_b, T beta, T* C, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch);

/// Images per block so that a buffer of `per_image` bytes per image stays
/// under a cap (256 MiB) while at least one image is processed.
std::int64_t images_per_block(const ConvProblem& pr, std::size_t per_image);

}  // namespace magmadnn::conv::cuda
