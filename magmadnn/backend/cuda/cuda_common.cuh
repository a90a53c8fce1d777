/// @file cuda_common.cuh
/// Launch helpers shared by the backend's .cu files: grid sizing for
/// grid-stride loops (64-bit indices) and block-wide reductions.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "magmadnn/backend/cuda/cuda_check.h"
#include "magmadnn/backend/cuda/cuda_context.h"

namespace magmadnn::cuda {

inline constexpr int kBlock = 256;

/// Blocks for a grid-stride loop over n items: enough to fill every SM a few
/// times over (latency hiding) but no more, since each thread then strides.
inline unsigned grid_for(std::int64_t n, const DeviceContext& c, int block = kBlock) {
  const std::int64_t blocks = (n + block - 1) / block;
  const std::int64_t cap = std::int64_t{c.sm_count} * 32;
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(blocks, cap)));
}

/// Blocks for a loop with one block per row, striding when rows exceed the cap.
inline unsigned grid_rows(std::int64_t rows) {
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>(rows, 65535)));
}

__device__ inline std::int64_t global_thread() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t grid_stride() { return static_cast<std::int64_t>(blockDim.x) * gridDim.x; }

/// Reduces `v` over the block with `op` (identity for lanes that hold no
/// value); every thread gets the result. blockDim.x must be a multiple of 32
/// and `scratch` at least 32 elements of shared memory. Starts with a barrier
/// so that scratch may be reused by consecutive calls.
template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T identity, T* scratch) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = static_cast<int>(blockDim.x >> 5);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? scratch[lane] : identity;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) scratch[0] = v;
  }
  __syncthreads();
  return scratch[0];
}

struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct MaxOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a < b ? b : a; }
};
struct MinOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return b < a ? b : a; }
};

}  // namespace magmadnn::cuda
