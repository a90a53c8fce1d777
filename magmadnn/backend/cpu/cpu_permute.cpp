// permute: y's axis i is x's axis perm[i].
//
// The permutation is first simplified: size-1 axes are dropped and output
// axes that are already adjacent and in order in x are merged, so e.g.
// {0, 2, 3, 1} on NCHW becomes a batched 2-D transpose and {1, 0} on a
// vector-like matrix becomes a copy. Then either
//  - x's innermost axis is still y's innermost: copy contiguous runs; or
//  - a blocked 2-D transpose between y's innermost axis and the axis that is
//    innermost in x, batched over the remaining axes; the tiles keep both the
//    strided reads and the strided writes inside L1.
#include <algorithm>
#include <cstring>

#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/backend/index_plan.h"

namespace magmadnn::cpu {
namespace {

constexpr int kMaxDims = BroadcastDesc::kMaxDims;
constexpr std::int64_t kTile = 32;

// The simplified permutation plus each output axis's stride in y.
struct Plan : index_plan::PermutePlan {
  std::int64_t ys[kMaxDims] = {};
};

Plan simplify(int ndim, const std::int64_t* shape, const int* perm) {
  Plan p;
  static_cast<index_plan::PermutePlan&>(p) = index_plan::simplify_permute(ndim, shape, perm);
  std::int64_t s = 1;
  for (int i = p.nd - 1; i >= 0; --i) {
    p.ys[i] = s;
    s *= p.size[i];
  }
  return p;
}

// Offsets in x and y of the `b`-th combination of the axes in `axes`.
inline void offsets(const Plan& p, const int* axes, int count, std::int64_t b, std::int64_t* xo, std::int64_t* yo) {
  std::int64_t ox = 0, oy = 0;
  for (int k = count - 1; k >= 0; --k) {
    const int ax = axes[k];
    const std::int64_t idx = b % p.size[ax];
    b /= p.size[ax];
    ox += idx * p.xs[ax];
    oy += idx * p.ys[ax];
  }
  *xo = ox;
  *yo = oy;
}

}  // namespace

template <typename T>
void CpuKernels<T>::permute(const T* x, T* y, int ndim, const std::int64_t* shape, const int* perm) {
  std::int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  if (n == 0) return;
  const Plan p = simplify(ndim, shape, perm);
  if (p.nd <= 1) {  // one run in x order (or a single element): a plain copy
    std::memcpy(y, x, static_cast<std::size_t>(n) * sizeof(T));
    return;
  }
  const int last = p.nd - 1;
  if (p.xs[last] == 1) {
    const std::int64_t len = p.size[last], runs = n / len;
    int axes[kMaxDims];
    for (int i = 0; i < last; ++i) axes[i] = i;
    parallel_for(runs, n > kParallelThreshold, [&](std::int64_t r) {
      std::int64_t xo, yo;
      offsets(p, axes, last, r, &xo, &yo);
      std::memcpy(y + yo, x + xo, static_cast<std::size_t>(len) * sizeof(T));
    });
    return;
  }

  const int q = static_cast<int>(std::min_element(p.xs, p.xs + p.nd) - p.xs);
  int batch_axes[kMaxDims];
  int nb = 0;
  std::int64_t batch = 1;
  for (int i = 0; i < last; ++i) {
    if (i == q) continue;
    batch_axes[nb++] = i;
    batch *= p.size[i];
  }
  const std::int64_t rows = p.size[q], cols = p.size[last];
  const std::int64_t xs_q = p.xs[q], ys_q = p.ys[q], xs_c = p.xs[last];
  const std::int64_t tr = (rows + kTile - 1) / kTile, tc = (cols + kTile - 1) / kTile;
  const std::int64_t tasks = batch * tr * tc;
  parallel_for(tasks, n > kParallelThreshold, [&](std::int64_t t) {
    const std::int64_t b = t / (tr * tc), rest = t % (tr * tc);
    const std::int64_t i0 = (rest / tc) * kTile, j0 = (rest % tc) * kTile;
    const std::int64_t i1 = std::min(rows, i0 + kTile), j1 = std::min(cols, j0 + kTile);
    std::int64_t xo, yo;
    offsets(p, batch_axes, nb, b, &xo, &yo);
    const T* xb = x + xo;
    T* yb = y + yo;
    for (std::int64_t i = i0; i < i1; ++i) {
      for (std::int64_t j = j0; j < j1; ++j) yb[i * ys_q + j] = xb[i * xs_q + j * xs_c];
    }
  });
}

template void CpuKernels<float>::permute(const float*, float*, int, const std::int64_t*, const int*);
template void CpuKernels<double>::permute(const double*, double*, int, const std::int64_t*, const int*);

}  // namespace magmadnn::cpu
