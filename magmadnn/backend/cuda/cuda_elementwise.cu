// Elementwise kernels: fill, copy, unary, unary_backward, binary (with
// broadcasting), axpy, and the bias + activation epilogue of gemm_bias_act.
//
// Each is a grid-stride loop over 64-bit indices. The op is a kernel argument
// and the switch on it is uniform across the grid, so there is one kernel per
// family instead of one per op (compile time), at the price of a branch that
// every warp takes the same way.
#include "magmadnn/backend/cuda/cuda_common.cuh"
#include "magmadnn/backend/cuda/cuda_kernels.h"
#include "magmadnn/backend/index_plan.h"
#include "magmadnn/backend/scalar_ops.h"
#include "magmadnn/backend/unary_op_table.h"

namespace magmadnn::cuda {
namespace {

template <typename T>
__global__ void fill_kernel(T* x, std::int64_t n, T value) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) x[i] = value;
}

template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* y, std::int64_t n, T p) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) y[i] = ops::unary(op, x[i], p);
}

// v is y for the ops that differentiate from y, else x.
template <typename T>
__global__ void unary_backward_kernel(UnaryOp op, const T* v, const T* dy, T* dx, std::int64_t n, T p) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) dx[i] = ops::unary_grad(op, v[i], dy[i], p);
}

// How each operand of a binary op is indexed from the output index i.
enum class Access : int { Dense, Scalar, Row, Strided };

Access access_of(const std::int64_t* strides, const BroadcastDesc& d) {
  if (index_plan::is_dense(strides, d)) return Access::Dense;
  if (index_plan::is_scalar(strides, d)) return Access::Scalar;
  if (index_plan::is_row(strides, d)) return Access::Row;
  return Access::Strided;
}

__device__ inline std::int64_t operand_offset(Access acc, const std::int64_t* strides, const BroadcastDesc& d,
                                              std::int64_t i, std::int64_t cols) {
  switch (acc) {
    case Access::Dense: return i;
    case Access::Scalar: return 0;
    case Access::Row: return i % cols;
    default: break;
  }
  // Strided: the output multi-index of i, dotted with this operand's strides.
  std::int64_t off = 0;
  for (int ax = d.ndim - 1; ax >= 0; --ax) {
    const std::int64_t idx = i % d.shape[ax];
    i /= d.shape[ax];
    off += idx * strides[ax];
  }
  return off;
}

// The descriptor travels by value in the kernel's parameter space (200 bytes),
// so no device copy of it is needed.
template <typename T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, T* out, BroadcastDesc d, Access aa, Access ab,
                              std::int64_t n, std::int64_t cols) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    const T va = a[operand_offset(aa, d.a_strides, d, i, cols)];
    const T vb = b[operand_offset(ab, d.b_strides, d, i, cols)];
    out[i] = ops::binary(op, va, vb);
  }
}

template <typename T>
__global__ void axpy_kernel(std::int64_t n, T alpha, const T* x, T* y) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) y[i] += alpha * x[i];
}

template <typename T>
__global__ void bias_act_kernel(T* C, std::int64_t m, std::int64_t n, std::int64_t ldc, const T* bias, UnaryOp act,
                                T p) {
  const std::int64_t total = m * n;
  for (std::int64_t t = global_thread(); t < total; t += grid_stride()) {
    const std::int64_t i = t / n, j = t % n;
    T v = C[i * ldc + j];
    if (bias) v += bias[j];
    C[i * ldc + j] = ops::unary(act, v, p);
  }
}

__global__ void probe_kernel() {}

}  // namespace

// Asks for the attributes of a trivial kernel: fails (no kernel image) when
// the build targets an architecture the device cannot run, which is better
// reported once at backend start-up than at the first real launch.
cudaError_t probe_kernel_image() {
  cudaFuncAttributes attr{};
  return cudaFuncGetAttributes(&attr, probe_kernel);
}

template <typename T>
void CudaKernels<T>::fill(T* x, std::int64_t n, T value) {
  if (n <= 0) return;
  const DeviceContext& c = contexts_.current();
  fill_kernel<<<grid_for(n, c), kBlock, 0, c.stream.get()>>>(x, n, value);
  MAGMADNN_KERNEL_CHECK();
}

template <typename T>
void CudaKernels<T>::copy(const T* x, T* y, std::int64_t n) {
  if (n <= 0) return;
  const DeviceContext& c = contexts_.current();
  MAGMADNN_CUDA_CHECK(
      cudaMemcpyAsync(y, x, static_cast<std::size_t>(n) * sizeof(T), cudaMemcpyDefault, c.stream.get()));
}

template <typename T>
void CudaKernels<T>::unary(UnaryOp op, const T* x, T* y, std::int64_t n, T p) {
  if (n <= 0) return;
  const DeviceContext& c = contexts_.current();
  if (op == UnaryOp::Identity) {
    if (x != y)
      MAGMADNN_CUDA_CHECK(
          cudaMemcpyAsync(y, x, static_cast<std::size_t>(n) * sizeof(T), cudaMemcpyDefault, c.stream.get()));
    return;
  }
  unary_kernel<<<grid_for(n, c), kBlock, 0, c.stream.get()>>>(op, x, y, n, p);
  MAGMADNN_KERNEL_CHECK();
}

template <typename T>
void CudaKernels<T>::unary_backward(UnaryOp op, const T* x, const T* y, const T* dy, T* dx, std::int64_t n, T p) {
  if (n <= 0) return;
  const DeviceContext& c = contexts_.current();
  const T* v = grad_reads_y(op) ? y : x;
  unary_backward_kernel<<<grid_for(n, c), kBlock, 0, c.stream.get()>>>(op, v, dy, dx, n, p);
  MAGMADNN_KERNEL_CHECK();
}

template <typename T>
void CudaKernels<T>::binary(BinaryOp op, const T* a, const T* b, T* out, const BroadcastDesc& d) {
  const std::int64_t n = d.numel();
  if (n <= 0) return;
  const DeviceContext& c = contexts_.current();
  const std::int64_t cols = d.ndim > 0 ? d.shape[d.ndim - 1] : 1;
  binary_kernel<<<grid_for(n, c), kBlock, 0, c.stream.get()>>>(op, a, b, out, d, access_of(d.a_strides, d),
                                                                access_of(d.b_strides, d), n, cols);
  MAGMADNN_KERNEL_CHECK();
}

template <typename T>
void CudaKernels<T>::axpy(std::int64_t n, T alpha, const T* x, T* y) {
  if (n <= 0) return;
  const DeviceContext& c = contexts_.current();
  axpy_kernel<<<grid_for(n, c), kBlock, 0, c.stream.get()>>>(n, alpha, x, y);
  MAGMADNN_KERNEL_CHECK();
}

template <typename T>
void bias_act_on_device(T* C, std::int64_t m, std::int64_t n, std::int64_t ldc, const T* bias, UnaryOp act, T p,
                        const DeviceContext& c) {
  if (m <= 0 || n <= 0 || (!bias && act == UnaryOp::Identity)) return;
  bias_act_kernel<<<grid_for(m * n, c), kBlock, 0, c.stream.get()>>>(C, m, n, ldc, bias, act, p);
  MAGMADNN_KERNEL_CHECK();
}

#define MAGMADNN_INSTANTIATE(T)                                                                               \
  template void CudaKernels<T>::fill(T*, std::int64_t, T);                                                    \
  template void CudaKernels<T>::copy(const T*, T*, std::int64_t);                                             \
  template void CudaKernels<T>::unary(UnaryOp, const T*, T*, std::int64_t, T);                                \
  template void CudaKernels<T>::unary_backward(UnaryOp, const T*, const T*, const T*, T*, std::int64_t, T);   \
  template void CudaKernels<T>::binary(BinaryOp, const T*, const T*, T*, const BroadcastDesc&);               \
  template void CudaKernels<T>::axpy(std::int64_t, T, const T*, T*);                                          \
  template void bias_act_on_device<T>(T*, std::int64_t, std::int64_t, std::int64_t, const T*, UnaryOp, T, \
                                      const DeviceContext&);
MAGMADNN_INSTANTIATE(float)
MAGMADNN_INSTANTIATE(double)
#undef MAGMADNN_INSTANTIATE

}  // namespace magmadnn::cuda
