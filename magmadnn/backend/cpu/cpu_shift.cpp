// ShiftRight / ShiftLeft (SHM-Learn-Dist §4): the realignments of the
// folded-bias dense layer, one pass over the rows.
#include <cstring>

#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"

namespace magmadnn::cpu {

template <typename T>
void CpuKernels<T>::shift_right(const T* x, T* y, std::int64_t rows, std::int64_t cols, T lead) {
  const auto bytes = static_cast<std::size_t>(cols) * sizeof(T);
  parallel_for(rows, rows * cols > kParallelThreshold, [&](std::int64_t i) {
    T* row = y + i * (cols + 1);
    row[0] = lead;
    if (bytes > 0) std::memcpy(row + 1, x + i * cols, bytes);
  });
}

template <typename T>
void CpuKernels<T>::shift_left(const T* x, T* y, std::int64_t rows, std::int64_t cols) {
  const auto bytes = static_cast<std::size_t>(cols) * sizeof(T);
  if (bytes == 0) return;
  parallel_for(rows, rows * cols > kParallelThreshold,
               [&](std::int64_t i) { std::memcpy(y + i * cols, x + i * (cols + 1) + 1, bytes); });
}

template void CpuKernels<float>::shift_right(const float*, float*, std::int64_t, std::int64_t, float);
template void CpuKernels<double>::shift_right(const double*, double*, std::int64_t, std::int64_t, double);
template void CpuKernels<float>::shift_left(const float*, float*, std::int64_t, std::int64_t);
template void CpuKernels<double>::shift_left(const double*, double*, std::int64_t, std::int64_t);

}  // namespace magmadnn::cpu
