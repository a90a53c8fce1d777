/// @file cpu_parallel.h
/// The one threading primitive of the CPU kernels.
#pragma once

#include <cstdint>

namespace magmadnn::cpu {

/// Calls f(i) for i in [0, n), over OpenMP threads when `parallel`. A serial
/// call never enters a parallel region: even `#pragma omp parallel if(0)`
/// costs a few hundred nanoseconds in libgomp, which dominates the small
/// tensors a graph executes most often.
template <typename F>
inline void parallel_for(std::int64_t n, bool parallel, F&& f) {
  if (!parallel || n < 2) {
    for (std::int64_t i = 0; i < n; ++i) f(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) f(i);
}

}  // namespace magmadnn::cpu
