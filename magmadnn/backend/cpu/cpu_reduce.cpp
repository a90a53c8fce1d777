// Reductions over the middle axis of [outer, axis, inner].
//
// Sums of floats accumulate in double: a float running sum over a long axis
// (a batch, a whole tensor) loses digits linearly in the length; double keeps
// the result exact to float precision for any realistic size, at the cost of
// a conversion per element.
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"

namespace magmadnn::cpu {
namespace {

// Columns of the inner axis handled together: an accumulator block that stays
// in registers / L1 while the axis is walked.
constexpr std::int64_t kInnerBlock = 256;
// Fewer independent (row, column block) tasks than this and a large sum is
// split along its axis instead.
constexpr std::int64_t kMinTasks = 16;
constexpr std::int64_t kAxisChunks = 32;

template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;

template <typename T>
void sum_reduce(const T* x, T* y, std::int64_t outer, std::int64_t axis, std::int64_t inner, bool mean) {
  const double scale = mean ? 1.0 / static_cast<double>(axis) : 1.0;
  const std::int64_t work = outer * axis * inner;
  if (inner == 1 && (outer >= kMinTasks || work <= kParallelThreshold)) {
    parallel_for(outer, work > kParallelThreshold, [=](std::int64_t o) {
      const T* row = x + o * axis;
      Acc<T> s = 0;
#pragma omp simd reduction(+ : s)
      for (std::int64_t a = 0; a < axis; ++a) s += row[a];
      y[o] = static_cast<T>(mean ? s * scale : s);
    });
    return;
  }
  const std::int64_t blocks = (inner + kInnerBlock - 1) / kInnerBlock;
  // Sums of [a0, a1) of the axis for column block `bl` of row `o`, into acc.
  auto partial = [=](std::int64_t o, std::int64_t bl, std::int64_t a0, std::int64_t a1, Acc<T>* acc) {
    const std::int64_t j0 = bl * kInnerBlock, len = std::min(kInnerBlock, inner - j0);
    for (std::int64_t a = a0; a < a1; ++a) {
      const T* src = x + (o * axis + a) * inner + j0;
#pragma omp simd
      for (std::int64_t j = 0; j < len; ++j) acc[j] += src[j];
    }
  };
  const std::int64_t tasks = outer * blocks;
  if (work > kParallelThreshold && tasks < kMinTasks) {
    // Too few rows to keep the threads busy (a whole-tensor sum, a bias
    // gradient): split the axis into chunks, then add the chunks' sums.
    const std::int64_t chunks = std::min<std::int64_t>(kAxisChunks, axis);
    std::vector<Acc<T>> sums(static_cast<std::size_t>(chunks * outer * inner), Acc<T>(0));
    parallel_for(chunks * tasks, true, [&](std::int64_t t) {
      const std::int64_t c = t / tasks, o = (t % tasks) / blocks, bl = t % blocks;
      Acc<T>* acc = sums.data() + (c * outer + o) * inner + bl * kInnerBlock;
      partial(o, bl, axis * c / chunks, axis * (c + 1) / chunks, acc);
    });
    for (std::int64_t i = 0; i < outer * inner; ++i) {
      Acc<T> s = 0;
      for (std::int64_t c = 0; c < chunks; ++c) s += sums[c * outer * inner + i];
      y[i] = static_cast<T>(mean ? s * scale : s);
    }
    return;
  }
  parallel_for(tasks, work > kParallelThreshold, [=](std::int64_t t) {
    const std::int64_t o = t / blocks, bl = t % blocks;
    const std::int64_t j0 = bl * kInnerBlock, len = std::min(kInnerBlock, inner - j0);
    Acc<T> acc[kInnerBlock] = {};
    partial(o, bl, 0, axis, acc);
    T* dst = y + o * inner + j0;
    for (std::int64_t j = 0; j < len; ++j) dst[j] = static_cast<T>(mean ? acc[j] * scale : acc[j]);
  });
}

template <bool IS_MAX, typename T>
void extremum_reduce(const T* x, T* y, std::int64_t outer, std::int64_t axis, std::int64_t inner) {
  const T init = IS_MAX ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  const std::int64_t work = outer * axis * inner;
  const std::int64_t blocks = (inner + kInnerBlock - 1) / kInnerBlock;
  parallel_for(outer * blocks, work > kParallelThreshold, [=](std::int64_t t) {
    const std::int64_t o = t / blocks, bl = t % blocks;
    const std::int64_t j0 = bl * kInnerBlock, len = std::min(kInnerBlock, inner - j0);
    T acc[kInnerBlock];
    std::fill(acc, acc + len, init);
    for (std::int64_t a = 0; a < axis; ++a) {
      const T* src = x + (o * axis + a) * inner + j0;
#pragma omp simd
      for (std::int64_t j = 0; j < len; ++j) {
        if constexpr (IS_MAX) acc[j] = src[j] > acc[j] ? src[j] : acc[j];
        else acc[j] = src[j] < acc[j] ? src[j] : acc[j];
      }
    }
    std::copy(acc, acc + len, y + o * inner + j0);
  });
}

}  // namespace

template <typename T>
void CpuKernels<T>::reduce(ReduceOp op, const T* x, T* y, std::int64_t outer, std::int64_t axis,
                           std::int64_t inner) {
  if (outer == 0 || inner == 0) return;
  switch (op) {
    case ReduceOp::Sum: sum_reduce(x, y, outer, axis, inner, false); return;
    case ReduceOp::Mean: sum_reduce(x, y, outer, axis, inner, true); return;
    case ReduceOp::Max: extremum_reduce<true>(x, y, outer, axis, inner); return;
    case ReduceOp::Min: extremum_reduce<false>(x, y, outer, axis, inner); return;
  }
}

template <typename T>
void CpuKernels<T>::argmax(const T* x, std::int64_t* idx, std::int64_t outer, std::int64_t axis,
                           std::int64_t inner) {
  if (outer == 0 || inner == 0) return;
  const std::int64_t work = outer * axis * inner;
  const std::int64_t blocks = (inner + kInnerBlock - 1) / kInnerBlock;
  parallel_for(outer * blocks, work > kParallelThreshold, [=](std::int64_t t) {
    const std::int64_t o = t / blocks, bl = t % blocks;
    const std::int64_t j0 = bl * kInnerBlock, len = std::min(kInnerBlock, inner - j0);
    T best[kInnerBlock];
    std::int64_t* out = idx + o * inner + j0;
    const T* first = x + o * axis * inner + j0;
    for (std::int64_t j = 0; j < len; ++j) {
      best[j] = axis > 0 ? first[j] : T(0);
      out[j] = 0;
    }
    // Strictly greater: on ties the earliest index is kept.
    for (std::int64_t a = 1; a < axis; ++a) {
      const T* src = x + (o * axis + a) * inner + j0;
      for (std::int64_t j = 0; j < len; ++j) {
        if (src[j] > best[j]) {
          best[j] = src[j];
          out[j] = a;
        }
      }
    }
  });
}

template void CpuKernels<float>::reduce(ReduceOp, const float*, float*, std::int64_t, std::int64_t, std::int64_t);
template void CpuKernels<double>::reduce(ReduceOp, const double*, double*, std::int64_t, std::int64_t,
                                         std::int64_t);
template void CpuKernels<float>::argmax(const float*, std::int64_t*, std::int64_t, std::int64_t, std::int64_t);
template void CpuKernels<double>::argmax(const double*, std::int64_t*, std::int64_t, std::int64_t, std::int64_t);

}  // namespace magmadnn::cpu
