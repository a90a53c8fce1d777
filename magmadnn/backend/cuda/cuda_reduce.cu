// Reductions over the middle axis of [outer, axis, inner], argmax, and
// row-wise softmax / log-softmax with their gradients.
//
// Float sums accumulate in double, as on the CPU backend: a float running sum
// over a long axis loses digits linearly in its length, and matching the
// CPU's accumulator keeps the parity tolerances tight.
//
// Two shapes of work: when there are many outputs, or the inner axis is wide
// enough for coalesced reads, one thread walks the axis per output; otherwise
// (a few long rows) a whole block shares one output and reduces in shared memory.
#include <cuda/std/limits>

#include <algorithm>
#include <mutex>

#include "magmadnn/backend/cuda/cuda_common.cuh"
#include "magmadnn/backend/cuda/cuda_kernels.h"
#include "magmadnn/backend/scalar_ops.h"

namespace magmadnn::cuda {
namespace {

template <typename T>
struct AccOf {
  using type = T;
};
template <>
struct AccOf<float> {
  using type = double;
};
template <typename T>
using Acc = typename AccOf<T>::type;

constexpr std::int64_t kManyOutputs = 8192;

template <typename T>
__device__ inline T reduce_identity(ReduceOp op) {
  if (op == ReduceOp::Max) return -::cuda::std::numeric_limits<T>::infinity();
  if (op == ReduceOp::Min) return ::cuda::std::numeric_limits<T>::infinity();
  return T(0);
}

template <typename A>
__device__ inline A reduce_step(ReduceOp op, A acc, A v) {
  if (op == ReduceOp::Max) return v > acc ? v : acc;
  if (op == ReduceOp::Min) return v < acc ? v : acc;
  return acc + v;
}

template <typename T, typename A>
__device__ inline T reduce_finish(ReduceOp op, A acc, std::int64_t axis) {
  if (op == ReduceOp::Mean) return static_cast<T>(acc * (1.0 / static_cast<double>(axis)));
  return static_cast<T>(acc);
}

// One thread per output (o, i); consecutive threads read consecutive i.
template <typename T>
__global__ void reduce_thread_kernel(ReduceOp op, const T* x, T* y, std::int64_t outer, std::int64_t axis,
                                     std::int64_t inner) {
  using A = Acc<T>;
  const std::int64_t outputs = outer * inner;
  for (std::int64_t t = global_thread(); t < outputs; t += grid_stride()) {
    const std::int64_t o = t / inner, i = t % inner;
    const T* src = x + o * axis * inner + i;
    A acc = reduce_identity<A>(op);
    for (std::int64_t a = 0; a < axis; ++a) acc = reduce_step<A>(op, acc, static_cast<A>(src[a * inner]));
    y[t] = reduce_finish<T>(op, acc, axis);
  }
}

// One block per output.
template <typename T>
__global__ void reduce_block_kernel(ReduceOp op, const T* x, T* y, std::int64_t outer, std::int64_t axis,
                                    std::int64_t inner) {
  using A = Acc<T>;
  __shared__ A scratch[32];
  const std::int64_t outputs = outer * inner;
  for (std::int64_t t = blockIdx.x; t < outputs; t += gridDim.x) {
    const std::int64_t o = t / inner, i = t % inner;
    const T* src = x + o * axis * inner + i;
    const A id = reduce_identity<A>(op);
    A acc = id;
    for (std::int64_t a = threadIdx.x; a < axis; a += blockDim.x)
      acc = reduce_step<A>(op, acc, static_cast<A>(src[a * inner]));
    if (op == ReduceOp::Max) acc = block_reduce(acc, MaxOp{}, id, scratch);
    else if (op == ReduceOp::Min) acc = block_reduce(acc, MinOp{}, id, scratch);
    else acc = block_reduce(acc, SumOp{}, id, scratch);
    if (threadIdx.x == 0) y[t] = reduce_finish<T>(op, acc, axis);
  }
}

// Few outputs over a long axis (a whole-tensor sum, a loss): one block per
// output would leave most of the GPU idle, so each output's axis is split in
// `chunks` pieces reduced by separate blocks into partials (stage 1), which
// one block per output then combines (stage 2). The split is fixed by the
// sizes, so the result does not vary from run to run (no atomics).
template <typename T>
__global__ void reduce_partial_kernel(ReduceOp op, const T* x, Acc<T>* partial, std::int64_t axis,
                                      std::int64_t inner, std::int64_t chunk_len, int chunks) {
  using A = Acc<T>;
  __shared__ A scratch[32];
  const std::int64_t t = blockIdx.y;
  const std::int64_t o = t / inner, i = t % inner;
  const T* src = x + o * axis * inner + i;
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.x) * chunk_len;
  const std::int64_t end = begin + chunk_len < axis ? begin + chunk_len : axis;
  const A id = reduce_identity<A>(op);
  A acc = id;
  for (std::int64_t a = begin + threadIdx.x; a < end; a += blockDim.x)
    acc = reduce_step<A>(op, acc, static_cast<A>(src[a * inner]));
  if (op == ReduceOp::Max) acc = block_reduce(acc, MaxOp{}, id, scratch);
  else if (op == ReduceOp::Min) acc = block_reduce(acc, MinOp{}, id, scratch);
  else acc = block_reduce(acc, SumOp{}, id, scratch);
  if (threadIdx.x == 0) partial[t * chunks + blockIdx.x] = acc;
}

template <typename T>
__global__ void reduce_combine_kernel(ReduceOp op, const Acc<T>* partial, T* y, std::int64_t outputs, int chunks,
                                      std::int64_t axis) {
  using A = Acc<T>;
  __shared__ A scratch[32];
  for (std::int64_t t = blockIdx.x; t < outputs; t += gridDim.x) {
    const A id = reduce_identity<A>(op);
    A acc = id;
    for (int c = threadIdx.x; c < chunks; c += blockDim.x) acc = reduce_step<A>(op, acc, partial[t * chunks + c]);
    if (op == ReduceOp::Max) acc = block_reduce(acc, MaxOp{}, id, scratch);
    else if (op == ReduceOp::Min) acc = block_reduce(acc, MinOp{}, id, scratch);
    else acc = block_reduce(acc, SumOp{}, id, scratch);
    if (threadIdx.x == 0) y[t] = reduce_finish<T>(op, acc, axis);  // Mean divides the summed partials once
  }
}

constexpr std::int64_t kSplitMinAxis = std::int64_t{1} << 15;
constexpr std::int64_t kSplitMaxChunks = 1024;
constexpr std::int64_t kSplitChunkMin = std::int64_t{kBlock} * 16;  // elements per block, at least

// Pieces per output for the split reduction, or 0 when it does not pay.
template <typename T>
std::int64_t split_chunks(std::int64_t outputs, std::int64_t axis, const DeviceContext& c) {
  if (outputs >= c.sm_count || axis < kSplitMinAxis) return 0;
  const std::int64_t fit = static_cast<std::int64_t>(c.scratch_bytes / sizeof(Acc<T>)) / outputs;
  const std::int64_t want = (axis + kSplitChunkMin - 1) / kSplitChunkMin;
  const std::int64_t chunks = std::min({kSplitMaxChunks, want, fit});
  return chunks >= 2 ? chunks : 0;
}

// Argmax keeps the first index on ties, as the CPU's strictly-greater scan.
template <typename T>
__global__ void argmax_thread_kernel(const T* x, std::int64_t* idx, std::int64_t outer, std::int64_t axis,
                                     std::int64_t inner) {
  const std::int64_t outputs = outer * inner;
  for (std::int64_t t = global_thread(); t < outputs; t += grid_stride()) {
    const std::int64_t o = t / inner, i = t % inner;
    const T* src = x + o * axis * inner + i;
    T best = axis > 0 ? src[0] : T(0);
    std::int64_t arg = 0;
    for (std::int64_t a = 1; a < axis; ++a) {
      const T v = src[a * inner];
      if (v > best) {
        best = v;
        arg = a;
      }
    }
    idx[t] = arg;
  }
}

template <typename T>
__global__ void argmax_block_kernel(const T* x, std::int64_t* idx, std::int64_t outer, std::int64_t axis,
                                    std::int64_t inner) {
  __shared__ T best_s[32];
  __shared__ std::int64_t arg_s[32];
  const std::int64_t outputs = outer * inner;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (std::int64_t t = blockIdx.x; t < outputs; t += gridDim.x) {
    const std::int64_t o = t / inner, i = t % inner;
    const T* src = x + o * axis * inner + i;
    // Each thread scans its indices in increasing order (strictly greater keeps
    // its first maximum); merges then prefer the smaller index on ties.
    T best = -::cuda::std::numeric_limits<T>::infinity();
    std::int64_t arg = -1;
    for (std::int64_t a = threadIdx.x; a < axis; a += blockDim.x) {
      const T v = src[a * inner];
      if (arg < 0 || v > best) {
        best = v;
        arg = a;
      }
    }
    auto merge = [](T& b, std::int64_t& ai, T ob, std::int64_t oa) {
      if (oa < 0) return;
      if (ai < 0 || ob > b || (ob == b && oa < ai)) {
        b = ob;
        ai = oa;
      }
    };
    for (int off = 16; off > 0; off >>= 1) merge(best, arg, __shfl_xor_sync(0xffffffffu, best, off),
                                                 __shfl_xor_sync(0xffffffffu, arg, off));
    __syncthreads();  // the previous output's readers of the scratch are done
    if (lane == 0) {
      best_s[warp] = best;
      arg_s[warp] = arg;
    }
    __syncthreads();
    if (warp == 0) {
      best = lane < warps ? best_s[lane] : T(0);
      arg = lane < warps ? arg_s[lane] : -1;
      for (int off = 16; off > 0; off >>= 1) merge(best, arg, __shfl_xor_sync(0xffffffffu, best, off),
                                                   __shfl_xor_sync(0xffffffffu, arg, off));
      if (lane == 0) idx[t] = arg < 0 ? 0 : arg;
    }
  }
}

inline bool thread_per_output(std::int64_t outer, std::int64_t inner) {
  return inner >= 32 || outer * inner >= kManyOutputs;
}

// Threads per softmax row: a warp for short rows (most of a big block would idle).
inline int row_block(std::int64_t cols) { return cols <= 128 ? 32 : (cols <= 1024 ? 128 : 256); }

template <typename T>
__global__ void softmax_kernel(const T* x, T* y, std::int64_t rows, std::int64_t cols, bool log) {
  using A = Acc<T>;
  __shared__ T max_s[32];
  __shared__ A sum_s[32];
  const T ninf = -::cuda::std::numeric_limits<T>::infinity();
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    T mx = ninf;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) mx = xr[j] > mx ? xr[j] : mx;
    mx = block_reduce(mx, MaxOp{}, ninf, max_s);
    A sum = 0;
    if (log) {
      for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += static_cast<A>(ops::m_exp(xr[j] - mx));
      sum = block_reduce(sum, SumOp{}, A(0), sum_s);
      const T shift = mx + static_cast<T>(ops::m_log(sum));
      for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = xr[j] - shift;
    } else {
      // y is written where it is read (same thread, same j), so y may alias x.
      for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        const T e = ops::m_exp(xr[j] - mx);
        yr[j] = e;
        sum += static_cast<A>(e);
      }
      sum = block_reduce(sum, SumOp{}, A(0), sum_s);
      const T inv = static_cast<T>(A(1) / sum);
      for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) yr[j] *= inv;
    }
  }
}

// softmax:     dx = y * (dy - sum(dy * y))
// log-softmax: dx = dy - exp(y) * sum(dy)
template <typename T>
__global__ void softmax_backward_kernel(const T* y, const T* dy, T* dx, std::int64_t rows, std::int64_t cols,
                                        bool log) {
  using A = Acc<T>;
  __shared__ A sum_s[32];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* yr = y + r * cols;
    const T* gr = dy + r * cols;
    T* dr = dx + r * cols;
    A s = 0;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      s += log ? static_cast<A>(gr[j]) : static_cast<A>(gr[j]) * static_cast<A>(yr[j]);
    s = block_reduce(s, SumOp{}, A(0), sum_s);
    const T st = static_cast<T>(s);
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      dr[j] = log ? gr[j] - ops::m_exp(yr[j]) * st : yr[j] * (gr[j] - st);
  }
}

}  // namespace

template <typename T>
void CudaKernels<T>::reduce(ReduceOp op, const T* x, T* y, std::int64_t outer, std::int64_t axis,
                            std::int64_t inner) {
  if (outer <= 0 || inner <= 0) return;
  DeviceContext& c = contexts_.current();
  const std::int64_t outputs = outer * inner;
  if (thread_per_output(outer, inner)) {
    reduce_thread_kernel<<<grid_for(outputs, c), kBlock, 0, c.stream.get()>>>(op, x, y, outer, axis, inner);
  } else if (const std::int64_t chunks = split_chunks<T>(outputs, axis, c); chunks > 0) {
    const std::int64_t chunk_len = (axis + chunks - 1) / chunks;
    auto* partial = static_cast<Acc<T>*>(c.scratch.get());
    std::lock_guard<std::mutex> lock(c.scratch_mutex);
    const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(outputs));
    reduce_partial_kernel<<<grid, kBlock, 0, c.stream.get()>>>(op, x, partial, axis, inner, chunk_len,
                                                               static_cast<int>(chunks));
    MAGMADNN_KERNEL_CHECK();
    reduce_combine_kernel<T><<<grid_rows(outputs), kBlock, 0, c.stream.get()>>>(op, partial, y, outputs,
                                                                                static_cast<int>(chunks), axis);
  } else {
    reduce_block_kernel<<<grid_rows(outer * inner), kBlock, 0, c.stream.get()>>>(op, x, y, outer, axis, inner);
  }
  MAGMADNN_KERNEL_CHECK();
}

template <typename T>
void CudaKernels<T>::argmax(const T* x, std::int64_t* idx, std::int64_t outer, std::int64_t axis,
                            std::int64_t inner) {
  if (outer <= 0 || inner <= 0) return;
  const DeviceContext& c = contexts_.current();
  if (thread_per_output(outer, inner)) {
    argmax_thread_kernel<<<grid_for(outer * inner, c), kBlock, 0, c.stream.get()>>>(x, idx, outer, axis, inner);
  } else {
    argmax_block_kernel<<<grid_rows(outer * inner), kBlock, 0, c.stream.get()>>>(x, idx, outer, axis, inner);
  }
  MAGMADNN_KERNEL_CHECK();
}

template <typename T>
void CudaKernels<T>::softmax(const T* x, T* y, std::int64_t rows, std::int64_t cols, bool log) {
  if (rows <= 0 || cols <= 0) return;
  const DeviceContext& c = contexts_.current();
  softmax_kernel<<<grid_rows(rows), row_block(cols), 0, c.stream.get()>>>(x, y, rows, cols, log);
  MAGMADNN_KERNEL_CHECK();
}

template <typename T>
void CudaKernels<T>::softmax_backward(const T* y, const T* dy, T* dx, std::int64_t rows, std::int64_t cols,
                                      bool log) {
  if (rows <= 0 || cols <= 0) return;
  const DeviceContext& c = contexts_.current();
  softmax_backward_kernel<<<grid_rows(rows), row_block(cols), 0, c.stream.get()>>>(y, dy, dx, rows, cols, log);
  MAGMADNN_KERNEL_CHECK();
}

#define MAGMADNN_INSTANTIATE(T)                                                                                 \
  template void CudaKernels<T>::reduce(ReduceOp, const T*, T*, std::int64_t, std::int64_t, std::int64_t);       \
  template void CudaKernels<T>::argmax(const T*, std::int64_t*, std::int64_t, std::int64_t, std::int64_t);      \
  template void CudaKernels<T>::softmax(const T*, T*, std::int64_t, std::int64_t, bool);                        \
  template void CudaKernels<T>::softmax_backward(const T*, const T*, T*, std::int64_t, std::int64_t, bool);
MAGMADNN_INSTANTIATE(float)
MAGMADNN_INSTANTIATE(double)
#undef MAGMADNN_INSTANTIATE

}  // namespace magmadnn::cuda
