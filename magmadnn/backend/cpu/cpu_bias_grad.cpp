// unary_backward_colsum: a fused linear layer's activation gradient and bias
// gradient in one pass.
//
// The two passes it replaces (unary_backward over the batch, then a column
// sum of the result) each read a batch x units matrix; the second re-reads
// what the first just wrote. Here each task owns a block of columns, walks the
// rows once, writes dx and keeps the block's running sums in registers, so y
// and dy are read once and dx is never re-read. Tasks own disjoint columns, so
// the sums need no combining step and are the same for any thread count.
#include <algorithm>
#include <type_traits>

#include "magmadnn/backend/cpu/cpu_bf16.h"
#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/backend/cpu/unary_dispatch.h"
#include "magmadnn/backend/scalar_ops.h"

namespace magmadnn::cpu {
namespace {

// Columns per task: two AVX-512 vectors of float (four of the double
// accumulators). Narrow enough that a 528-unit layer gives 17 tasks, which two
// threads share 9/8; wide enough that each row's piece is two cache lines.
constexpr std::int64_t kColBlock = 32;

// As cpu_reduce.cpp: float sums accumulate in double, so a long batch loses
// no digits to the running sum.
template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;

// Each task owns a block of columns, walks the rows once and keeps the
// block's running sums in registers; store(at, d, len) writes a row's piece
// of dx (d: the block's derivatives, at: the piece's offset in dx).
template <typename T, typename Store>
void colsum_blocks(UnaryOp op, const T* y, const T* dy, T* db, std::int64_t rows, std::int64_t cols, T p,
                   Store store) {
  if (cols <= 0) return;
  if (rows <= 0) {
    if (db) std::fill(db, db + cols, T(0));
    return;
  }
  const std::int64_t blocks = (cols + kColBlock - 1) / kColBlock;
  // The derivative costs a multiply or two per element, so the threshold is
  // the elementwise kernels' plain one.
  const bool parallel = rows * cols > kParallelThreshold;
  with_unary_op(op, [=](auto c) {
    constexpr UnaryOp OP = decltype(c)::value;
    parallel_for(blocks, parallel, [=](std::int64_t bl) {
      const std::int64_t j0 = bl * kColBlock, len = std::min(kColBlock, cols - j0);
      Acc<T> acc[kColBlock] = {};
      alignas(64) T d[kColBlock];
      for (std::int64_t i = 0; i < rows; ++i) {
        const std::int64_t at = i * cols + j0;
        const T* yr = y + at;
        const T* dyr = dy + at;
#pragma omp simd
        for (std::int64_t j = 0; j < len; ++j) {
          d[j] = ops::unary_grad(OP, yr[j], dyr[j], p);
          acc[j] += d[j];
        }
        store(at, d, len);
      }
      if (db) {
        for (std::int64_t j = 0; j < len; ++j) db[j0 + j] = static_cast<T>(acc[j]);
      }
    });
  });
}

}  // namespace

template <typename T>
void CpuKernels<T>::unary_backward_colsum(UnaryOp op, const T* y, const T* dy, T* dx, T* db, std::int64_t rows,
                                          std::int64_t cols, T p) {
  colsum_blocks(op, y, dy, db, rows, cols, p, [dx](std::int64_t at, const T* d, std::int64_t len) {
    std::copy(d, d + len, dx + at);
  });
}

// The rounding is a call per row piece (two vectors of 16) to the cast's
// own vector clones, so the bits are the cast's; what it saves is the float
// dx's write and re-read and the cast's separate pass (with its fork/join).
template <typename T>
bool CpuKernels<T>::unary_backward_colsum_bf16(UnaryOp op, const T* y, const T* dy, bfloat16* dx, T* db,
                                               std::int64_t rows, std::int64_t cols, T p) {
  if constexpr (!std::is_same_v<T, float>) {
    return false;  // mixed precision keeps float activations only
  } else {
    colsum_blocks(op, y, dy, db, rows, cols, p, [dx](std::int64_t at, const float* d, std::int64_t len) {
      round_to_bf16_serial(d, dx + at, len);
    });
    return true;
  }
}

template void CpuKernels<float>::unary_backward_colsum(UnaryOp, const float*, const float*, float*, float*,
                                                       std::int64_t, std::int64_t, float);
template void CpuKernels<double>::unary_backward_colsum(UnaryOp, const double*, const double*, double*, double*,
                                                        std::int64_t, std::int64_t, double);
template bool CpuKernels<float>::unary_backward_colsum_bf16(UnaryOp, const float*, const float*, bfloat16*, float*,
                                                            std::int64_t, std::int64_t, float);
template bool CpuKernels<double>::unary_backward_colsum_bf16(UnaryOp, const double*, const double*, bfloat16*,
                                                             double*, std::int64_t, std::int64_t, double);

}  // namespace magmadnn::cpu
