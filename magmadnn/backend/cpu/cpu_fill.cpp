#include <cmath>
#include <cstring>

#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/core/philox.h"

namespace magmadnn::cpu {

template <typename T>
void CpuKernels<T>::fill(T* x, std::int64_t n, T value) {
#pragma omp parallel for if (n > kParallelThreshold) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) x[i] = value;
}

template <typename T>
void CpuKernels<T>::copy(const T* x, T* y, std::int64_t n) {
  if (n > 0) std::memcpy(y, x, static_cast<std::size_t>(n) * sizeof(T));
}

template <typename T>
void CpuKernels<T>::fill_uniform(T* x, std::int64_t n, T a, T b, std::uint64_t seed, std::uint64_t stream) {
  const T scale = b - a;
#pragma omp parallel for if (n > kParallelThreshold) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    x[i] = a + scale * philox::uniform<T>(seed, stream, static_cast<std::uint64_t>(i));
  }
}

// Box-Muller on two uniforms drawn from element i's own Philox block, so the
// value depends on (seed, stream, i) only and matches the CUDA kernel.
template <typename T>
void CpuKernels<T>::fill_normal(T* x, std::int64_t n, T mean, T std, std::uint64_t seed, std::uint64_t stream) {
#pragma omp parallel for if (n > kParallelThreshold / 4) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const philox::u32x4 r = philox::block(seed, static_cast<std::uint64_t>(i), stream ^ 0x8000000000000000ull);
    const double u1 = 1.0 - philox::to_unit_double(r.v[0], r.v[1]);  // (0, 1]: log is finite
    const double u2 = philox::to_unit_double(r.v[2], r.v[3]);
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    x[i] = mean + std * static_cast<T>(z);
  }
}

}  // namespace magmadnn::cpu

// The remaining methods are instantiated in their own files; this file owns
// the explicit instantiation of the class's vtable-bearing definitions.
template class magmadnn::cpu::CpuKernels<float>;
template class magmadnn::cpu::CpuKernels<double>;
