// gemm_update_bf16: a bf16 weight-gradient product and its SGD update in
// one sweep of row tiles (mixed precision, plain SGD applied in backward).
//
// Made whole, the gradient of a 528 x 528 weight is 1.1 MB of float that
// oneDNN's threads write in their partition of the product and the update
// pass's threads read back in theirs; in a training step, where nothing
// else touches the float weight, that pass ran at about half the speed it
// reaches on warm data. Here each thread takes whole row tiles: it computes
// a tile of the product into a buffer of its own, single-threaded (oneDNN
// runs sequentially inside a parallel region), and updates the tile's rows
// of W (and their bf16 copy) from it at once.
#include <omp.h>

#include <algorithm>
#include <exception>
#include <type_traits>

#include "magmadnn/backend/cpu/cpu_bf16.h"
#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/backend/cpu/thread_buffer.h"

namespace magmadnn::cpu {
namespace {

// Bytes of one tile's float product at most. The MLP's weights (528 x 528
// and 528 x 784) then make one tile per thread, which measured fastest
// (bench_bf16_update, two threads: 11-18% under the GEMM plus the fused
// pass with W cold, 7-26% warm; 128 KB tiles gained 4-7% cold and lost
// warm): a thread updates rows whose product it made itself, in its own
// cache, rather than rows another core's share of the GEMM wrote.
constexpr std::int64_t kTileBytes = std::int64_t{1} << 20;

struct TileTag {};

}  // namespace

template <typename T>
bool CpuKernels<T>::gemm_update_bf16(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                                     const bfloat16* A, std::int64_t lda, const bfloat16* B, std::int64_t ldb,
                                     T beta, T* W, bfloat16* W16) {
  if constexpr (!std::is_same_v<T, float>) {
    return false;  // mixed precision keeps float masters only
  } else {
    if (m == 0 || n == 0) return true;
    // Whole tiles per thread, as many as keep each tile under kTileBytes, so
    // the threads get equal shares of rows.
    const std::int64_t threads = std::max(1, omp_get_max_threads());
    const std::int64_t bytes = m * n * std::int64_t(sizeof(float));
    const std::int64_t per_thread =
        std::max<std::int64_t>(1, (bytes + threads * kTileBytes - 1) / (threads * kTileBytes));
    const std::int64_t rows = (m + threads * per_thread - 1) / (threads * per_thread);
    const std::int64_t tiles = (m + rows - 1) / rows;
    const auto tile = [&](std::int64_t t) {
      const std::int64_t r0 = t * rows, len = std::min(rows, m - r0);
      float* g = static_cast<float*>(
          thread_buffer<TileTag>(static_cast<std::size_t>(len * n) * sizeof(float), "gemm_update: a product tile"));
      // Rows r0.. of op(A): columns of A when it is read transposed (A may
      // be null when k == 0).
      const bfloat16* a = k == 0 ? A : ta ? A + r0 : A + r0 * lda;
      this->gemm_mixed(dtype::bf16, ta, tb, len, n, k, 1.f, a, lda, B, ldb, 0.f, g, n);
      float* w = W + r0 * n;
      bfloat16* w16 = W16 ? W16 + r0 * n : nullptr;
      const std::int64_t count = len * n;
      for (std::int64_t i0 = 0; i0 < count; i0 += kBf16Block) {
        const std::int64_t l = std::min(kBf16Block, count - i0);
        float* yb = w + i0;
        const float* xb = g + i0;
#pragma omp simd
        for (std::int64_t i = 0; i < l; ++i) yb[i] = alpha * xb[i] + beta * yb[i];
        if (w16) round_to_bf16_serial(yb, w16 + i0, l);
      }
    };
    // An exception may not leave an OpenMP region: the first is kept and
    // rethrown after it (the rows of tiles finished by then are updated).
    std::exception_ptr error;
    parallel_for(tiles, tiles > 1, [&](std::int64_t t) {
      try {
        tile(t);
      } catch (...) {
#pragma omp critical(magmadnn_gemm_update_error)
        if (!error) error = std::current_exception();
      }
    });
    if (error) std::rethrow_exception(error);
    return true;
  }
}

template bool CpuKernels<float>::gemm_update_bf16(bool, bool, std::int64_t, std::int64_t, std::int64_t, float,
                                                  const bfloat16*, std::int64_t, const bfloat16*, std::int64_t, float,
                                                  float*, bfloat16*);
template bool CpuKernels<double>::gemm_update_bf16(bool, bool, std::int64_t, std::int64_t, std::int64_t, double,
                                                   const bfloat16*, std::int64_t, const bfloat16*, std::int64_t,
                                                   double, double*, bfloat16*);

}  // namespace magmadnn::cpu
