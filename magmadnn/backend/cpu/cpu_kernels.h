/// @file cpu_kernels.h
/// Kernels<T> on the host. Each method family is defined in its own file
/// (cpu_fill.cpp, cpu_elementwise.cpp, cpu_gemm.cpp, cpu_reduce.cpp,
/// cpu_bias_grad.cpp, cpu_gemm_update.cpp, cpu_softmax.cpp,
/// cpu_permute.cpp, cpu_shift.cpp) and instantiated for float and double.
/// Threading: OpenMP over all cores, with a size threshold under which the
/// loop runs serially (a parallel region costs more than it saves).
#pragma once

#include <type_traits>

#include "magmadnn/backend/kernels.h"

namespace magmadnn::cpu {

/// Below this many elements an elementwise loop runs on one thread.
inline constexpr std::int64_t kParallelThreshold = 1 << 15;

template <typename T>
class CpuKernels final : public Kernels<T> {
 public:
  void fill(T* x, std::int64_t n, T value) override;
  void copy(const T* x, T* y, std::int64_t n) override;
  void unary(UnaryOp op, const T* x, T* y, std::int64_t n, T p) override;
  void unary_backward(UnaryOp op, const T* x, const T* y, const T* dy, T* dx, std::int64_t n, T p) override;
  void binary(BinaryOp op, const T* a, const T* b, T* out, const BroadcastDesc& d) override;
  void axpy(std::int64_t n, T alpha, const T* x, T* y) override;
  void axpby(std::int64_t n, T alpha, const T* x, T beta, T* y) override;
  bool axpby_bf16(std::int64_t n, T alpha, const T* x, T beta, T* y, bfloat16* y16) override;
  void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* A,
            std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) override;
  void gemm_bias_act(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* A,
                     std::int64_t lda, const T* B, std::int64_t ldb, const T* bias, UnaryOp act, T p, T* C,
                     std::int64_t ldc) override;
  // ab = bf16 only (oneDNN), T = float; f16 is refused (precision.h).
  void gemm_mixed(dtype ab, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                  const void* A, std::int64_t lda, const void* B, std::int64_t ldb, T beta, T* C,
                  std::int64_t ldc) override;
  void gemm_bias_act_mixed(dtype ab, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                           const void* A, std::int64_t lda, const void* B, std::int64_t ldb, const T* bias,
                           UnaryOp act, T p, T* C, std::int64_t ldc) override;
  bool has_gemm_update_bf16() const noexcept override { return std::is_same_v<T, float>; }
  bool gemm_update_bf16(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                        const bfloat16* A, std::int64_t lda, const bfloat16* B, std::int64_t ldb, T beta, T* W,
                        bfloat16* W16) override;
  void reduce(ReduceOp op, const T* x, T* y, std::int64_t outer, std::int64_t axis, std::int64_t inner) override;
  void unary_backward_colsum(UnaryOp op, const T* y, const T* dy, T* dx, T* db, std::int64_t rows,
                             std::int64_t cols, T p) override;
  bool unary_backward_colsum_bf16(UnaryOp op, const T* y, const T* dy, bfloat16* dx, T* db, std::int64_t rows,
                                  std::int64_t cols, T p) override;
  void argmax(const T* x, std::int64_t* idx, std::int64_t outer, std::int64_t axis, std::int64_t inner) override;
  void softmax(const T* x, T* y, std::int64_t rows, std::int64_t cols, bool log) override;
  void softmax_backward(const T* y, const T* dy, T* dx, std::int64_t rows, std::int64_t cols, bool log) override;
  bool softmax_xent(const T* z, const T* y, T* logp, std::int64_t rows, std::int64_t cols, double* total) override;
  bool softmax_xent_backward(const T* logp, const T* y, T* dz, std::int64_t rows, std::int64_t cols, T s) override;
  bool batchnorm_forward(const typename Kernels<T>::BatchNormForward& a) override;
  bool batchnorm_backward(const typename Kernels<T>::BatchNormBackward& a) override;
  void permute(const T* x, T* y, int ndim, const std::int64_t* shape, const int* perm) override;
  void shift_right(const T* x, T* y, std::int64_t rows, std::int64_t cols, T lead) override;
  void shift_left(const T* x, T* y, std::int64_t rows, std::int64_t cols) override;
  void fill_uniform(T* x, std::int64_t n, T a, T b, std::uint64_t seed, std::uint64_t stream) override;
  void fill_normal(T* x, std::int64_t n, T mean, T std, std::uint64_t seed, std::uint64_t stream) override;
};

extern template class CpuKernels<float>;
extern template class CpuKernels<double>;

}  // namespace magmadnn::cpu
