// Batch normalisation on the channel-blocked layout. A block of B channels
// is B adjacent lanes at every pixel, so each loop below runs B lanes wide
// (one vector) and keeps a sum per lane, which is a sum per channel.
//
// Unlike the plain kernel, which gives each thread whole channels, a block
// may be the only one (16 channels at AVX-512's B = 16), so the sums are
// split over pieces of the batch too: kPieces fixed pieces, added in piece
// order, keep the result independent of the thread count. The sums are
// double, shifted by each channel's first value as in the plain kernel.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "magmadnn/backend/cpu/batchnorm_blocked.h"
#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/backend/cpu/simd_clones.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::cpu {
namespace {

constexpr std::int64_t kPieces = 8;

// Samples [begin, end) of piece `p` of n.
struct Piece {
  std::int64_t begin, end;
};
Piece piece(std::int64_t n, std::int64_t pieces, std::int64_t p) { return {n * p / pieces, n * (p + 1) / pieces}; }

// s += x - k, q += (x - k)^2 per lane, over r pixels of one block. Two
// sets of accumulators (even and odd pixels) halve the chain of dependent
// adds, which otherwise bounds the loop below memory speed; they are added
// at the end in a fixed order.
template <typename T, int B>
MAGMADNN_SIMD_CLONES void moments(const T* __restrict x, std::int64_t r, const double* k_, double* s, double* q) {
  double k[B], s0[B] = {}, q0[B] = {}, s1[B] = {}, q1[B] = {};
  for (int l = 0; l < B; ++l) k[l] = k_[l];
  std::int64_t i = 0;
  for (; i + 2 <= r; i += 2) {
    for (int l = 0; l < B; ++l) {
      const double d0 = static_cast<double>(x[i * B + l]) - k[l];
      const double d1 = static_cast<double>(x[(i + 1) * B + l]) - k[l];
      s0[l] += d0;
      q0[l] += d0 * d0;
      s1[l] += d1;
      q1[l] += d1 * d1;
    }
  }
  for (; i < r; ++i) {
    for (int l = 0; l < B; ++l) {
      const double d = static_cast<double>(x[i * B + l]) - k[l];
      s0[l] += d;
      q0[l] += d * d;
    }
  }
  for (int l = 0; l < B; ++l) s[l] += s0[l] + s1[l], q[l] += q0[l] + q1[l];
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

// gm = g where y > 0, else 0 (the ReLU's gradient, as the unary op's). In
// this float-only loop GCC turns the select into a vector compare and blend.
template <typename T>
MAGMADNN_SIMD_CLONES void relu_mask(const T* __restrict y, const T* __restrict g, T* __restrict gm, std::int64_t len) {
  for (std::int64_t j = 0; j < len; ++j) {
    const T v = g[j];  // read unconditionally, so the select needs no masked load
    gm[j] = y[j] > T(0) ? v : T(0);
  }
}

// s += g, q += g * (x - mean) per lane (g already masked), with two sets of
// accumulators as in moments().
template <typename T, int B>
MAGMADNN_SIMD_CLONES void grad_sums(const T* __restrict x, const T* __restrict g, std::int64_t r, const double* mean_,
                                    double* s, double* q) {
  double mean[B], s0[B] = {}, q0[B] = {}, s1[B] = {}, q1[B] = {};
  for (int l = 0; l < B; ++l) mean[l] = mean_[l];
  std::int64_t i = 0;
  for (; i + 2 <= r; i += 2) {
    for (int l = 0; l < B; ++l) {
      const double g0 = static_cast<double>(g[i * B + l]), g1 = static_cast<double>(g[(i + 1) * B + l]);
      s0[l] += g0;
      q0[l] += g0 * (static_cast<double>(x[i * B + l]) - mean[l]);
      s1[l] += g1;
      q1[l] += g1 * (static_cast<double>(x[(i + 1) * B + l]) - mean[l]);
    }
  }
  for (; i < r; ++i) {
    for (int l = 0; l < B; ++l) {
      const double gl = static_cast<double>(g[i * B + l]);
      s0[l] += gl;
      q0[l] += gl * (static_cast<double>(x[i * B + l]) - mean[l]);
    }
  }
  for (int l = 0; l < B; ++l) s[l] += s0[l] + s1[l], q[l] += q0[l] + q1[l];
}

// dx = scale * g' + k2 * (x - mean) + k3 per lane. In place (dx is g')
// has a loop of its own: through two pointers that may alias, GCC would
// send an exact alias to its scalar loop.
template <typename T, int B>
MAGMADNN_SIMD_CLONES void grad_apply(const T* __restrict x, const T* gm, T* dx, std::int64_t r, const T* mean_,
                                     const T* scale_, const T* k2_, const T* k3_) {
  T mean[B], scale[B], k2[B], k3[B];
  for (int l = 0; l < B; ++l) mean[l] = mean_[l], scale[l] = scale_[l], k2[l] = k2_[l], k3[l] = k3_[l];
  if (gm == dx) {
    for (std::int64_t i = 0; i < r; ++i) {
      for (int l = 0; l < B; ++l) dx[i * B + l] = scale[l] * dx[i * B + l] + k2[l] * (x[i * B + l] - mean[l]) + k3[l];
    }
    return;
  }
  const T* __restrict g = gm;
  T* __restrict d = dx;
  for (std::int64_t i = 0; i < r; ++i) {
    for (int l = 0; l < B; ++l) d[i * B + l] = scale[l] * g[i * B + l] + k2[l] * (x[i * B + l] - mean[l]) + k3[l];
  }
}

// Per-piece, per-lane sums of every block: [block][piece][lane], s then q.
struct Partials {
  std::int64_t pieces, lanes;
  std::vector<double> s, q;
  Partials(std::int64_t blocks, std::int64_t pieces_, int b)
      : pieces(pieces_), lanes(b), s(static_cast<std::size_t>(blocks * pieces_ * b)), q(s.size()) {}
  double* s_at(std::int64_t blk, std::int64_t p) { return s.data() + (blk * pieces + p) * lanes; }
  double* q_at(std::int64_t blk, std::int64_t p) { return q.data() + (blk * pieces + p) * lanes; }
  // The sums of channel lane `l` of block `blk`, added in piece order.
  std::pair<double, double> total(std::int64_t blk, int l) {
    double ts = 0.0, tq = 0.0;
    for (std::int64_t p = 0; p < pieces; ++p) ts += s_at(blk, p)[l], tq += q_at(blk, p)[l];
    return {ts, tq};
  }
};

template <typename T, int B>
void forward(const typename Kernels<T>::BatchNormForward& a) {
  const std::int64_t blocks = a.c / B, plane = a.r * B, size = a.n * a.c * a.r;
  const bool par = size > kParallelThreshold;
  if (!a.running_mean) {
    const std::int64_t pieces = std::clamp<std::int64_t>(a.n, 1, kPieces);
    // Each channel's shift: its first value (sample 0, pixel 0), which
    // sits at the channel's lane of its block's first pixel.
    std::vector<double> shift(static_cast<std::size_t>(a.c), 0.0);
    if (a.n * a.r > 0) {
      for (std::int64_t ch = 0; ch < a.c; ++ch) shift[ch] = static_cast<double>(a.x[(ch / B) * plane + ch % B]);
    }
    Partials part(blocks, pieces, B);
    parallel_for(blocks * pieces, par, [&](std::int64_t t) {
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
  parallel_for(a.n * blocks, par, [&](std::int64_t t) {
    const std::int64_t blk = t % blocks, off = t * plane;
    apply<T, B>(a.x + off, a.skip ? a.skip + off : nullptr, a.y + off, a.r, a.mean + blk * B,
                scale.data() + blk * B, a.beta + blk * B, a.relu);
  });
}

template <typename T, int B>
void backward(const typename Kernels<T>::BatchNormBackward& a) {
  const std::int64_t blocks = a.c / B, plane = a.r * B, size = a.n * a.c * a.r;
  const bool par = size > kParallelThreshold;
  const std::int64_t pieces = std::clamp<std::int64_t>(a.n, 1, kPieces);
  // With the ReLU, the masked gradient g' is written once, before the
  // sums, where the second visit reads it: dskip (which is g'), else dx,
  // else a row of the task's own.
  T* kept = a.y ? (a.dskip ? a.dskip : a.dx) : nullptr;
  std::vector<double> mean(static_cast<std::size_t>(a.c));
  for (std::int64_t ch = 0; ch < a.c; ++ch) mean[ch] = static_cast<double>(a.mean[ch]);
  Partials part(blocks, pieces, B);
  parallel_for(blocks * pieces, par, [&](std::int64_t t) {
    const std::int64_t blk = t / pieces;
    const Piece pc = piece(a.n, pieces, t % pieces);
    std::vector<T> row(a.y && !kept ? static_cast<std::size_t>(plane) : 0);
    for (std::int64_t i = pc.begin; i < pc.end; ++i) {
      const std::int64_t off = (i * blocks + blk) * plane;
      const T* g = a.g + off;
      if (a.y) {
        T* m = kept ? kept + off : row.data();
        relu_mask(a.y + off, g, m, plane);
        g = m;
      }
      grad_sums<T, B>(a.x + off, g, a.r, mean.data() + blk * B, part.s_at(blk, t % pieces),
                      part.q_at(blk, t % pieces));
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
  const bool copy_skip = a.dskip && !a.y;  // without the ReLU, dskip is g itself
  if (!a.dx && !copy_skip) return;
  parallel_for(a.n * blocks, par, [&](std::int64_t t) {
    const std::int64_t blk = t % blocks, off = t * plane;
    if (copy_skip) std::copy_n(a.g + off, plane, a.dskip + off);
    if (a.dx) {
      grad_apply<T, B>(a.x + off, (a.y ? kept : a.g) + off, a.dx + off, a.r, a.mean + blk * B,
                       scale.data() + blk * B, k2.data() + blk * B, k3.data() + blk * B);
    }
  });
}

}  // namespace

namespace {
// f(std::integral_constant<int, B>{}) for the block B = `block`, which must
// be 8 or 16 and divide the c channels.
template <typename F>
void with_block(int block, std::int64_t c, F&& f) {
  MAGMADNN_CHECK((block == 8 || block == 16) && c % block == 0, ValueError,
                 "batchnorm (blocked): channel block " << block << " does not divide " << c << " channels");
  if (block == 8) {
    f(std::integral_constant<int, 8>{});
  } else {
    f(std::integral_constant<int, 16>{});
  }
}
}  // namespace

template <typename T>
void batchnorm_forward_blocked(const typename Kernels<T>::BatchNormForward& a, int block) {
  with_block(block, a.c, [&](auto b) { forward<T, decltype(b)::value>(a); });
}

template <typename T>
void batchnorm_backward_blocked(const typename Kernels<T>::BatchNormBackward& a, int block) {
  with_block(block, a.c, [&](auto b) { backward<T, decltype(b)::value>(a); });
}

template void batchnorm_forward_blocked<float>(const Kernels<float>::BatchNormForward&, int);
template void batchnorm_forward_blocked<double>(const Kernels<double>::BatchNormForward&, int);
template void batchnorm_backward_blocked<float>(const Kernels<float>::BatchNormBackward&, int);
template void batchnorm_backward_blocked<double>(const Kernels<double>::BatchNormBackward&, int);

}  // namespace magmadnn::cpu
