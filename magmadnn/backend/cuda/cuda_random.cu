// Philox fills: element i of a fill is a pure function of (seed, stream, i),
// computed exactly as in backend/cpu/cpu_fill.cpp, so a seeded tensor holds
// the same numbers on the CPU and the GPU.
//
// nvcc contracts a + b * c into one fused multiply-add by default, while the
// host compiler (x86-64 without -mfma) rounds the product first; the explicit
// _rn intrinsics keep the two roundings of the CPU so uniform fills match bit
// for bit.
#include "magmadnn/backend/cuda/cuda_common.cuh"
#include "magmadnn/backend/cuda/cuda_kernels.h"
#include "magmadnn/core/philox.h"

namespace magmadnn::cuda {
namespace {

__device__ inline float mul_add_rn(float a, float b, float c) { return __fadd_rn(a, __fmul_rn(b, c)); }
__device__ inline double mul_add_rn(double a, double b, double c) { return __dadd_rn(a, __dmul_rn(b, c)); }

template <typename T>
__global__ void uniform_kernel(T* x, std::int64_t n, T a, T scale, std::uint64_t seed, std::uint64_t stream) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride())
    x[i] = mul_add_rn(a, scale, philox::uniform<T>(seed, stream, static_cast<std::uint64_t>(i)));
}

// Box-Muller in double on element i's own Philox block (see cpu_fill.cpp).
template <typename T>
__global__ void normal_kernel(T* x, std::int64_t n, T mean, T std, std::uint64_t seed, std::uint64_t stream) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    const philox::u32x4 r = philox::block(seed, static_cast<std::uint64_t>(i), stream ^ 0x8000000000000000ull);
    const double u1 = __dadd_rn(1.0, -philox::to_unit_double(r.v[0], r.v[1]));  // (0, 1]: log is finite
    const double u2 = philox::to_unit_double(r.v[2], r.v[3]);
    const double z = __dmul_rn(sqrt(__dmul_rn(-2.0, log(u1))), cos(__dmul_rn(6.283185307179586, u2)));
    x[i] = mul_add_rn(mean, std, static_cast<T>(z));
  }
}

}  // namespace

template <typename T>
void CudaKernels<T>::fill_uniform(T* x, std::int64_t n, T a, T b, std::uint64_t seed, std::uint64_t stream) {
  if (n <= 0) return;
  const DeviceContext& c = contexts_.current();
  uniform_kernel<<<grid_for(n, c), kBlock, 0, c.stream.get()>>>(x, n, a, b - a, seed, stream);
  MAGMADNN_KERNEL_CHECK();
}

template <typename T>
void CudaKernels<T>::fill_normal(T* x, std::int64_t n, T mean, T std, std::uint64_t seed, std::uint64_t stream) {
  if (n <= 0) return;
  const DeviceContext& c = contexts_.current();
  normal_kernel<<<grid_for(n, c), kBlock, 0, c.stream.get()>>>(x, n, mean, std, seed, stream);
  MAGMADNN_KERNEL_CHECK();
}

template void CudaKernels<float>::fill_uniform(float*, std::int64_t, float, float, std::uint64_t, std::uint64_t);
template void CudaKernels<double>::fill_uniform(double*, std::int64_t, double, double, std::uint64_t,
                                                std::uint64_t);
template void CudaKernels<float>::fill_normal(float*, std::int64_t, float, float, std::uint64_t, std::uint64_t);
template void CudaKernels<double>::fill_normal(double*, std::int64_t, double, double, std::uint64_t,
                                               std::uint64_t);

}  // namespace magmadnn::cuda
