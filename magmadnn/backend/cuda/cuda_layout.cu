// Data movement kernels: permute (axis transposition) and dtype conversion.
#include <type_traits>

#include "magmadnn/backend/cuda/cuda_common.cuh"
#include "magmadnn/backend/cuda/cuda_kernels.h"
#include "magmadnn/backend/index_plan.h"
#include "magmadnn/core/half.h"

namespace magmadnn::cuda {
namespace {

constexpr int kMaxDims = BroadcastDesc::kMaxDims;

// Output shape and, per output axis, the stride in x. Passed by value.
using PermuteDesc = index_plan::PermutePlan;

template <typename T>
__global__ void permute_kernel(const T* x, T* y, PermuteDesc p, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    std::int64_t rem = i, off = 0;
    for (int ax = p.nd - 1; ax >= 0; --ax) {
      const std::int64_t idx = rem % p.size[ax];
      rem /= p.size[ax];
      off += idx * p.xs[ax];
    }
    y[i] = x[off];
  }
}

// The CPU backend's rounding: through double when either side is f64, else
// through float (f16 <-> bf16 goes via float, which holds both exactly).
template <typename S, typename D>
__global__ void convert_kernel(const S* src, D* dst, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    if constexpr (std::is_same_v<S, double> || std::is_same_v<D, double>) {
      dst[i] = static_cast<D>(static_cast<double>(src[i]));
    } else {
      dst[i] = static_cast<D>(static_cast<float>(src[i]));
    }
  }
}

template <typename S, typename D>
void launch_convert(const void* src, void* dst, std::int64_t n, const DeviceContext& c) {
  convert_kernel<S, D><<<grid_for(n, c), kBlock, 0, c.stream.get()>>>(static_cast<const S*>(src),
                                                                       static_cast<D*>(dst), n);
  MAGMADNN_KERNEL_CHECK();
}

template <typename S>
void convert_from(const void* src, dtype dst_type, void* dst, std::int64_t n, const DeviceContext& c) {
  switch (dst_type) {
    case dtype::f32: launch_convert<S, float>(src, dst, n, c); return;
    case dtype::f64: launch_convert<S, double>(src, dst, n, c); return;
    case dtype::f16: launch_convert<S, half>(src, dst, n, c); return;
    case dtype::bf16: launch_convert<S, bfloat16>(src, dst, n, c); return;
    default: MAGMADNN_THROW(NotSupportedError, "convert to " << dtype_name(dst_type) << " on the GPU");
  }
}

}  // namespace

template <typename T>
void CudaKernels<T>::permute(const T* x, T* y, int ndim, const std::int64_t* shape, const int* perm) {
  MAGMADNN_CHECK(ndim >= 0 && ndim <= kMaxDims, NotSupportedError,
                 "permute of " << ndim << " axes (at most " << kMaxDims << ")");
  std::int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  if (n <= 0) return;
  const DeviceContext& c = contexts_.current();
  const PermuteDesc p = index_plan::simplify_permute(ndim, shape, perm);
  if (p.nd <= 1) {  // the order of x is kept: a plain copy
    MAGMADNN_CUDA_CHECK(
        cudaMemcpyAsync(y, x, static_cast<std::size_t>(n) * sizeof(T), cudaMemcpyDefault, c.stream.get()));
    return;
  }
  permute_kernel<<<grid_for(n, c), kBlock, 0, c.stream.get()>>>(x, y, p, n);
  MAGMADNN_KERNEL_CHECK();
}

void convert_on_device(dtype src_type, const void* src, dtype dst_type, void* dst, std::int64_t n,
                       const DeviceContext& c) {
  if (n <= 0) return;
  if (src_type == dst_type && (src_type == dtype::f32 || src_type == dtype::f64 || src_type == dtype::f16 ||
                               src_type == dtype::bf16)) {
    MAGMADNN_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(n) * dtype_size(src_type),
                                        cudaMemcpyDefault, c.stream.get()));
    return;
  }
  switch (src_type) {
    case dtype::f32: convert_from<float>(src, dst_type, dst, n, c); return;
    case dtype::f64: convert_from<double>(src, dst_type, dst, n, c); return;
    case dtype::f16: convert_from<half>(src, dst_type, dst, n, c); return;
    case dtype::bf16: convert_from<bfloat16>(src, dst_type, dst, n, c); return;
    default: MAGMADNN_THROW(NotSupportedError, "convert from " << dtype_name(src_type) << " on the GPU");
  }
}

template void CudaKernels<float>::permute(const float*, float*, int, const std::int64_t*, const int*);
template void CudaKernels<double>::permute(const double*, double*, int, const std::int64_t*, const int*);

}  // namespace magmadnn::cuda
