/// @file cuda_kernels.h
/// Kernels<T> on CUDA GPUs. Pointers are device (or unified) memory of the
/// current device; all work is queued on that device's stream (Contexts), so
/// a call returns before the GPU has finished and errors of the kernel itself
/// surface at the next synchronisation.
///
/// Method families live in small files: cuda_elementwise.cu (fill, copy,
/// unary, unary_backward, binary, axpy), cuda_reduce.cu (reduce, argmax,
/// softmax, softmax_backward), cuda_layout.cu (permute, dtype conversion),
/// cuda_random.cu (Philox fills), cuda_gemm.cpp (cuBLAS / cuBLASLt) and the
/// bias+activation epilogue kernel in cuda_elementwise.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "magmadnn/backend/cuda/cuda_context.h"
#include "magmadnn/backend/kernels.h"
#include "magmadnn/core/types.h"

namespace magmadnn::cuda {

template <typename T>
class CudaKernels final : public Kernels<T> {
 public:
  explicit CudaKernels(Contexts& contexts) : contexts_(contexts) {}

  void fill(T* x, std::int64_t n, T value) override;
  void copy(const T* x, T* y, std::int64_t n) override;
  void unary(UnaryOp op, const T* x, T* y, std::int64_t n, T p) override;
  void unary_backward(UnaryOp op, const T* x, const T* y, const T* dy, T* dx, std::int64_t n, T p) override;
  void binary(BinaryOp op, const T* a, const T* b, T* out, const BroadcastDesc& d) override;
  void axpy(std::int64_t n, T alpha, const T* x, T* y) override;
  void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* A,
            std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) override;
  void gemm_bias_act(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* A,
                     std::int64_t lda, const T* B, std::int64_t ldb, const T* bias, UnaryOp act, T p, T* C,
                     std::int64_t ldc) override;
  // bf16 or f16 operands, float accumulation and output (cublasGemmEx);
  // T = float only, double keeps the base class's NotSupportedError.
  void gemm_mixed(dtype ab, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                  const void* A, std::int64_t lda, const void* B, std::int64_t ldb, T beta, T* C,
                  std::int64_t ldc) override;
  void gemm_bias_act_mixed(dtype ab, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                           const void* A, std::int64_t lda, const void* B, std::int64_t ldb, const T* bias,
                           UnaryOp act, T p, T* C, std::int64_t ldc) override;
  void reduce(ReduceOp op, const T* x, T* y, std::int64_t outer, std::int64_t axis, std::int64_t inner) override;
  void argmax(const T* x, std::int64_t* idx, std::int64_t outer, std::int64_t axis, std::int64_t inner) override;
  void softmax(const T* x, T* y, std::int64_t rows, std::int64_t cols, bool log) override;
  void softmax_backward(const T* y, const T* dy, T* dx, std::int64_t rows, std::int64_t cols, bool log) override;
  void permute(const T* x, T* y, int ndim, const std::int64_t* shape, const int* perm) override;
  void fill_uniform(T* x, std::int64_t n, T a, T b, std::uint64_t seed, std::uint64_t stream) override;
  void fill_normal(T* x, std::int64_t n, T mean, T std, std::uint64_t seed, std::uint64_t stream) override;

 private:
  Contexts& contexts_;
};

/// dst[i] = (dst_type) src[i] on the current device's stream, with the same
/// rounding as the CPU backend (round to nearest even through float, or
/// through double when either side is f64).
void convert_on_device(dtype src_type, const void* src, dtype dst_type, void* dst, std::int64_t n,
                       const DeviceContext& ctx);

/// C[i, j] = act(C[i, j] + bias[j]) for an m x n row-major C with row stride
/// ldc (bias may be null): the epilogue of gemm_bias_act when cuBLASLt has no
/// fused one for the activation.
template <typename T>
void bias_act_on_device(T* C, std::int64_t m, std::int64_t n, std::int64_t ldc, const T* bias, UnaryOp act, T p,
                        const DeviceContext& ctx);

/// cudaSuccess when this build has kernel code the current device can run
/// (cuda_elementwise.cu); checked once when the backend starts.
cudaError_t probe_kernel_image();

}  // namespace magmadnn::cuda
