// Batch normalisation on the channel-blocked layout. A block of B channels
// is B adjacent lanes at every pixel, so each loop below runs B lanes wide
// (one vector) and keeps a sum per lane, which is a sum per channel. The
// drivers serve channels last (NHWC) too: its passes (batchnorm_nhwc.h)
// walk the memory in another order, the per-channel arithmetic is the same.
//
// Unlike the plain kernel, which gives each thread whole channels, a block
// may be the only one (16 channels at AVX-512's B = 16), so the sums are
// split over pieces of the batch too: kPieces fixed pieces, added in piece
// order, keep the result independent of the thread count. The sums are
// shifted by each channel's first value as in the plain kernel, and kept in
// double across chunks of kChunk pixels; within a chunk they run in T, one
// vector of B lanes, so that the loop is a handful of vector instructions a
// pixel. (Written in double throughout, GCC mixed scalar and vector code and
// spilled, and the sums took as long as the passes that also write.)
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "magmadnn/backend/cpu/batchnorm_blocked.h"
#include "magmadnn/backend/cpu/batchnorm_lanes.h"
#include "magmadnn/backend/cpu/batchnorm_nhwc.h"
#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/backend/cpu/lane_walk.h"
#include "magmadnn/backend/cpu/simd_clones.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::cpu {
namespace {

using namespace bn_lanes;

// s += x - k, q += (x - k)^2 per lane, over r pixels of one block. Two
// sets of accumulators (even and odd pixels) halve the chain of dependent
// adds; they are added at the end of each chunk in a fixed order.
template <typename T, int B>
MAGMADNN_SIMD_CLONES void moments(const T* __restrict x, std::int64_t r, const double* k_, double* s, double* q) {
  using V = Lanes<T, B>;
  const V k = splat<V>(k_);
  for (std::int64_t c0 = 0; c0 < r; c0 += kChunk) {
    const std::int64_t c1 = std::min(r, c0 + kChunk);
    V s0{}, q0{}, s1{}, q1{};
    std::int64_t i = c0;
    for (; i + 2 <= c1; i += 2) {
      const V d0 = load<V>(x + i * B) - k, d1 = load<V>(x + (i + 1) * B) - k;
      s0 += d0, q0 += d0 * d0, s1 += d1, q1 += d1 * d1;
    }
    if (i < c1) {
      const V d = load<V>(x + i * B) - k;
      s0 += d, q0 += d * d;
    }
    add_into(s, s0 + s1);
    add_into(q, q0 + q1);
  }
}

// y = f((x - mean) * scale + shift + skip) per lane; as the plain kernel,
// the ReLU is `v > 0 ? v : 0`. The per-lane constants are copied into
// locals, so that GCC need not assume that y overwrites them.
template <typename T, int B, bool SKIP, bool RELU>
[[gnu::always_inline]] inline void apply_rows(const T* __restrict x, const T* __restrict skip, T* __restrict y,
                                              std::int64_t r, const T* mean_, const T* scale_, const T* shift_) {
  T mean[B], scale[B], shift[B];
  for (int l = 0; l < B; ++l) mean[l] = mean_[l], scale[l] = scale_[l], shift[l] = shift_[l];
  for (std::int64_t i = 0; i < r; ++i) {
    for (int l = 0; l < B; ++l) {
      T v = (x[i * B + l] - mean[l]) * scale[l] + shift[l];
      if constexpr (SKIP) v += skip[i * B + l];
      if constexpr (RELU) v = v > T(0) ? v : T(0);
      y[i * B + l] = v;
    }
  }
}

template <typename T, int B>
MAGMADNN_SIMD_CLONES void apply(const T* x, const T* skip, T* y, std::int64_t r, const T* mean, const T* scale,
                                const T* shift, bool relu) {
  if (skip && relu) {
    apply_rows<T, B, true, true>(x, skip, y, r, mean, scale, shift);
  } else if (skip) {
    apply_rows<T, B, true, false>(x, skip, y, r, mean, scale, shift);
  } else if (relu) {
    apply_rows<T, B, false, true>(x, skip, y, r, mean, scale, shift);
  } else {
    apply_rows<T, B, false, false>(x, skip, y, r, mean, scale, shift);
  }
}

// s += g', q += g' (x - mean) per lane, g' the masked gradient, which is
// also written to `kept` when that is not null (the residual's gradient).
// Chunks and two sets of accumulators as in moments().
template <typename T, int B, bool RELU>
MAGMADNN_SIMD_CLONES void grad_sums(const T* __restrict x, const T* __restrict y, const T* __restrict g,
                                    T* __restrict kept, std::int64_t r, const double* mean_, double* s, double* q) {
  using V = Lanes<T, B>;
  const V mean = splat<V>(mean_);
  for (std::int64_t c0 = 0; c0 < r; c0 += kChunk) {
    const std::int64_t c1 = std::min(r, c0 + kChunk);
    V s0{}, q0{}, s1{}, q1{};
    auto pixel = [&](std::int64_t i, V& sa, V& qa) {
      const V gv = masked<V, RELU>(y + i * B, g + i * B);
      if (kept) store(kept + i * B, gv);
      sa += gv, qa += gv * (load<V>(x + i * B) - mean);
    };
    std::int64_t i = c0;
    for (; i + 2 <= c1; i += 2) pixel(i, s0, q0), pixel(i + 1, s1, q1);
    if (i < c1) pixel(i, s0, q0);
    add_into(s, s0 + s1);
    add_into(q, q0 + q1);
  }
}

// dx = scale * g' + k2 * (x - mean) + k3 per lane, g' the masked gradient.
// Each pixel is read before it is written, so dx may be g.
template <typename T, int B, bool RELU>
MAGMADNN_SIMD_CLONES void grad_apply(const T* x, const T* y, const T* g, T* dx, std::int64_t r, const T* mean_,
                                     const T* scale_, const T* k2_, const T* k3_) {
  using V = Lanes<T, B>;
  const V mean = load<V>(mean_), scale = load<V>(scale_), k2 = load<V>(k2_), k3 = load<V>(k3_);
  for (std::int64_t i = 0; i < r; ++i) {
    const V gv = masked<V, RELU>(y + i * B, g + i * B);
    store(dx + i * B, scale * gv + k2 * (load<V>(x + i * B) - mean) + k3);
  }
}

template <typename T, int B>
void forward(const typename Kernels<T>::BatchNormForward& a, bool channels_last) {
  const nhwc::Dims dims{a.n, a.c, a.r};
  const std::int64_t blocks = a.c / B, plane = a.r * B, size = a.n * a.c * a.r;
  const bool par = size > kParallelThreshold;
  if (!a.running_mean) {
    const std::int64_t pieces = std::clamp<std::int64_t>(a.n, 1, kPieces);
    // Each channel's shift: its first value (sample 0, pixel 0), which
    // sits at the channel's lane of its block's first pixel.
    std::vector<double> shift(static_cast<std::size_t>(a.c), 0.0);
    if (a.n * a.r > 0) {
      for (std::int64_t ch = 0; ch < a.c; ++ch)
        shift[ch] = static_cast<double>(channels_last ? a.x[ch] : a.x[(ch / B) * plane + ch % B]);
    }
    Partials part(blocks, pieces, B);
    if (channels_last) nhwc::moments<T, B>(a.x, dims, pieces, shift.data(), part);
    if (!channels_last) parallel_for(blocks * pieces, par, [&](std::int64_t t) {
      const std::int64_t blk = t / pieces;
      const Piece pc = piece(a.n, pieces, t % pieces);
      for (std::int64_t i = pc.begin; i < pc.end; ++i) {
        moments<T, B>(a.x + (i * blocks + blk) * plane, a.r, shift.data() + blk * B, part.s_at(blk, t % pieces),
                      part.q_at(blk, t % pieces));
      }
    });
    const double count = static_cast<double>(a.n * a.r);
    for (std::int64_t ch = 0; ch < a.c; ++ch) {
      const auto [s, q] = part.total(ch / B, static_cast<int>(ch % B));
      const double d = s / count;
      a.mean[ch] = static_cast<T>(shift[ch] + d);
      a.var[ch] = static_cast<T>(std::max(0.0, q / count - d * d));
    }
  } else {
    std::copy_n(a.running_mean, a.c, a.mean);
    std::copy_n(a.running_var, a.c, a.var);
  }
  std::vector<T> scale(static_cast<std::size_t>(a.c));
  for (std::int64_t ch = 0; ch < a.c; ++ch) {
    const double inv = 1.0 / std::sqrt(static_cast<double>(a.var[ch]) + static_cast<double>(a.eps));
    a.invstd[ch] = static_cast<T>(inv);
    scale[ch] = static_cast<T>(static_cast<double>(a.gamma[ch]) * inv);
  }
  if (channels_last) return nhwc::apply<T, B>(a.x, a.skip, a.y, dims, a.mean, scale.data(), a.beta, a.relu);
  parallel_for(a.n * blocks, par, [&](std::int64_t t) {
    const std::int64_t blk = t % blocks, off = t * plane;
    apply<T, B>(a.x + off, a.skip ? a.skip + off : nullptr, a.y + off, a.r, a.mean + blk * B,
                scale.data() + blk * B, a.beta + blk * B, a.relu);
  });
}

template <typename T, int B>
void backward(const typename Kernels<T>::BatchNormBackward& a, bool channels_last) {
  const nhwc::Dims dims{a.n, a.c, a.r};
  const std::int64_t blocks = a.c / B, plane = a.r * B, size = a.n * a.c * a.r;
  const bool par = size > kParallelThreshold;
  const std::int64_t pieces = std::clamp<std::int64_t>(a.n, 1, kPieces);
  const bool relu = a.y != nullptr;
  std::vector<double> mean(static_cast<std::size_t>(a.c));
  for (std::int64_t ch = 0; ch < a.c; ++ch) mean[ch] = static_cast<double>(a.mean[ch]);
  Partials part(blocks, pieces, B);
  auto sums = relu ? grad_sums<T, B, true> : grad_sums<T, B, false>;
  // The first visit (the sums) writes dskip, the masked gradient, on the
  // way; the second writes dx, reading g' from dskip where there is one and
  // masking g again where there is not: either is one stream fewer than
  // writing g' to a buffer of its own and reading it back.
  if (channels_last) nhwc::grad_sums<T, B>(a.x, a.y, a.g, a.dskip, dims, pieces, mean.data(), relu, part);
  if (!channels_last) parallel_for(blocks * pieces, par, [&](std::int64_t t) {
    const std::int64_t blk = t / pieces, p = t % pieces;
    const Piece pc = piece(a.n, pieces, p);
    for (std::int64_t i = pc.begin; i < pc.end; ++i) {
      const std::int64_t off = (i * blocks + blk) * plane;
      T* kept = a.dskip ? a.dskip + off : nullptr;
      const T* y = relu ? a.y + off : nullptr;
      sums(a.x + off, y, a.g + off, kept, a.r, mean.data() + blk * B, part.s_at(blk, p), part.q_at(blk, p));
    }
  });
  const double count = static_cast<double>(a.n * a.r);
  std::vector<T> scale(static_cast<std::size_t>(a.c)), k2(scale.size()), k3(scale.size());
  for (std::int64_t ch = 0; ch < a.c; ++ch) {
    const auto [sg, sgx] = part.total(ch / B, static_cast<int>(ch % B));
    const double inv = static_cast<double>(a.invstd[ch]);
    a.dbeta[ch] = static_cast<T>(sg);
    a.dgamma[ch] = static_cast<T>(sgx * inv);
    // dx = gamma invstd (g' - sum(g') / m - xhat sum(g' xhat) / m), xhat = (x - mean) invstd.
    const double sc = static_cast<double>(a.gamma[ch]) * inv;
    scale[ch] = static_cast<T>(sc);
    k2[ch] = static_cast<T>(a.training && count > 0 ? -sc * inv * inv * sgx / count : 0.0);
    k3[ch] = static_cast<T>(a.training && count > 0 ? -sc * sg / count : 0.0);
  }
  if (!a.dx) return;
  // With dskip, g' is there already; otherwise it is g, masked again if there is a ReLU.
  const bool remask = relu && !a.dskip;
  const T* gsrc = a.dskip ? a.dskip : a.g;
  if (channels_last) {
    return nhwc::grad_apply<T, B>(a.x, a.y, gsrc, a.dx, dims, a.mean, scale.data(), k2.data(), k3.data(), remask);
  }
  auto apply_grad = remask ? grad_apply<T, B, true> : grad_apply<T, B, false>;
  parallel_for(a.n * blocks, par, [&](std::int64_t t) {
    const std::int64_t blk = t % blocks, off = t * plane;
    apply_grad(a.x + off, remask ? a.y + off : nullptr, gsrc + off, a.dx + off, a.r, a.mean + blk * B,
               scale.data() + blk * B, k2.data() + blk * B, k3.data() + blk * B);
  });
}

}  // namespace

namespace {
// f(std::integral_constant<int, B>{}, channels last) for the lanes B of `layout`
// (a block of 8 or 16, or channels last), which must divide the c channels.
template <typename F>
void with_block(int layout, std::int64_t c, F&& f) {
  MAGMADNN_CHECK(walkable(c, layout), ValueError,
                 "batchnorm (blocked): layout " << layout << " cannot hold " << c << " channels");
  if (layout == 8) {
    f(std::integral_constant<int, 8>{}, false);
  } else {
    static_assert(kChannelsLastLanes == 16);
    f(std::integral_constant<int, 16>{}, layout == kChannelsLast);
  }
}
}  // namespace

template <typename T>
void batchnorm_forward_blocked(const typename Kernels<T>::BatchNormForward& a, int block) {
  with_block(block, a.c, [&](auto b, bool last) { forward<T, decltype(b)::value>(a, last); });
}

template <typename T>
void batchnorm_backward_blocked(const typename Kernels<T>::BatchNormBackward& a, int block) {
  with_block(block, a.c, [&](auto b, bool last) { backward<T, decltype(b)::value>(a, last); });
}

template void batchnorm_forward_blocked<float>(const Kernels<float>::BatchNormForward&, int);
template void batchnorm_forward_blocked<double>(const Kernels<double>::BatchNormForward&, int);
template void batchnorm_backward_blocked<float>(const Kernels<float>::BatchNormBackward&, int);
template void batchnorm_backward_blocked<double>(const Kernels<double>::BatchNormBackward&, int);

}  // namespace magmadnn::cpu
