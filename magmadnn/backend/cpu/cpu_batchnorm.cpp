// batchnorm_forward / batchnorm_backward: batch normalisation, with the
// residual add and ReLU that follow it in a residual block, in two visits of
// each channel per pass.
//
// Composed from elementwise ops, a training step of batch normalisation made
// seven passes forward and eight backward over the activation, each with a
// fresh tensor. Here one task owns a channel: it sums the channel's moments
// (or its gradient sums), then at once writes the channel's outputs, so the
// second visit finds the channel (128 x 784 floats for resnet's first block,
// 400 KB) still in the core's L2 and the activation crosses memory about
// once per pass. Channels are disjoint, so the sums need no combining step
// and are the same for any thread count.
//
// Sums are kept in eight double lanes in a fixed order (as
// conv::cpu_detail::sum_in_double), shifted by the channel's first value so
// that the variance, taken as E[d^2] - E[d]^2, does not cancel when the mean
// is large against the spread.
#include <algorithm>
#include <cmath>
#include <vector>

#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/backend/cpu/simd_clones.h"

namespace magmadnn::cpu {
namespace {

constexpr int kLanes = 8;

double combine(const double* v) { return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])); }

// Eight double sums each of s and q. The sums run in locals: through the
// caller's pointers GCC must assume s and q alias, keeps them in memory and
// does not vectorise (the backward pass ran 7x slower that way).
struct Lanes {
  double s[kLanes] = {}, q[kLanes] = {};
};

// s += d, q += d * d for d = p - k, lane by lane.
template <typename T>
MAGMADNN_SIMD_CLONES void shifted_moments(const T* p, std::int64_t len, double k, Lanes& acc) {
  double s[kLanes], q[kLanes];
  for (int l = 0; l < kLanes; ++l) s[l] = acc.s[l], q[l] = acc.q[l];
  std::int64_t j = 0;
  for (; j + kLanes <= len; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const double d = static_cast<double>(p[j + l]) - k;
      s[l] += d;
      q[l] += d * d;
    }
  }
  for (int l = 0; j < len; ++j, ++l) {
    const double d = static_cast<double>(p[j]) - k;
    s[l] += d;
    q[l] += d * d;
  }
  for (int l = 0; l < kLanes; ++l) acc.s[l] = s[l], acc.q[l] = q[l];
}

// The ReLU keeps `v > 0 ? v : 0`, the unary op's own expression, so a NaN
// maps as it does there.
template <typename T, bool SKIP, bool RELU>
[[gnu::always_inline]] inline void apply_row(const T* x, const T* skip, T* y, std::int64_t len, T mean, T scale,
                                              T shift) {
  for (std::int64_t j = 0; j < len; ++j) {
    T v = (x[j] - mean) * scale + shift;
    if constexpr (SKIP) v += skip[j];
    if constexpr (RELU) v = v > T(0) ? v : T(0);
    y[j] = v;
  }
}

template <typename T>
MAGMADNN_SIMD_CLONES void apply(const T* x, const T* skip, T* y, std::int64_t len, T mean, T scale, T shift,
                                bool relu) {
  if (skip && relu) {
    apply_row<T, true, true>(x, skip, y, len, mean, scale, shift);
  } else if (skip) {
    apply_row<T, true, false>(x, skip, y, len, mean, scale, shift);
  } else if (relu) {
    apply_row<T, false, true>(x, skip, y, len, mean, scale, shift);
  } else {
    apply_row<T, false, false>(x, skip, y, len, mean, scale, shift);
  }
}

// The gradient after the ReLU, as the unary op's: g times 1 where the output
// is positive, else 0. A product with a selected constant, not a selected g:
// GCC makes the select of g a branch in these double-lane loops, which
// mispredicts on activations of random sign (the pass ran 7x slower).
template <typename T, bool RELU>
[[gnu::always_inline]] inline T masked(const T* y, const T* g, std::int64_t j) {
  if constexpr (RELU) return g[j] * (y[j] > T(0) ? T(1) : T(0));
  return g[j];
}

// gm = the masked gradient, by a plain loop that GCC turns into vector
// compares. Made apart from the sums below: mixed into their double lanes,
// the mask became a compare and branch per element (the pass ran 9x slower).
template <typename T>
MAGMADNN_SIMD_CLONES void relu_masked(const T* y, const T* g, T* gm, std::int64_t len) {
  for (std::int64_t j = 0; j < len; ++j) gm[j] = masked<T, true>(y, g, j);
}

// s += g, q += g * (x - mean), lane by lane.
template <typename T>
MAGMADNN_SIMD_CLONES void grad_sums(const T* x, const T* g, std::int64_t len, double mean, Lanes& acc) {
  double s[kLanes], q[kLanes];
  for (int l = 0; l < kLanes; ++l) s[l] = acc.s[l], q[l] = acc.q[l];
  std::int64_t j = 0;
  for (; j + kLanes <= len; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const double gl = static_cast<double>(g[j + l]);
      s[l] += gl;
      q[l] += gl * (static_cast<double>(x[j + l]) - mean);
    }
  }
  for (int l = 0; j < len; ++j, ++l) {
    const double gl = static_cast<double>(g[j]);
    s[l] += gl;
    q[l] += gl * (static_cast<double>(x[j]) - mean);
  }
  for (int l = 0; l < kLanes; ++l) acc.s[l] = s[l], acc.q[l] = q[l];
}

// dx = scale * g + k2 * (x - mean) + k3, and dskip = g where dskip is not
// null; g is the gradient after the ReLU. dx may be g itself: that case has
// a loop of its own, since through two pointers GCC's overlap check would
// send an exact alias to the scalar loop.
template <typename T, bool DX, bool DSKIP>
[[gnu::always_inline]] inline void grad_apply_row(const T* x, const T* g, T* dx, T* dskip, std::int64_t len, T mean,
                                                   T scale, T k2, T k3) {
  for (std::int64_t j = 0; j < len; ++j) {
    if constexpr (DSKIP) dskip[j] = g[j];
    if constexpr (DX) dx[j] = scale * g[j] + k2 * (x[j] - mean) + k3;
  }
}

template <typename T>
MAGMADNN_SIMD_CLONES void grad_apply(const T* x, const T* g, T* dx, T* dskip, std::int64_t len, T mean, T scale,
                                     T k2, T k3) {
  if (dx != nullptr && dx == g) {
    for (std::int64_t j = 0; j < len; ++j) dx[j] = scale * dx[j] + k2 * (x[j] - mean) + k3;
  } else if (dx && dskip) {
    grad_apply_row<T, true, true>(x, g, dx, dskip, len, mean, scale, k2, k3);
  } else if (dx) {
    grad_apply_row<T, true, false>(x, g, dx, dskip, len, mean, scale, k2, k3);
  } else if (dskip) {
    grad_apply_row<T, false, true>(x, g, dx, dskip, len, mean, scale, k2, k3);
  }
}

// f(ch, at) for every channel (at: its offset in a sample), one task each,
// on the threads when the tensor is large.
template <typename F>
void for_each_channel(std::int64_t n, std::int64_t c, std::int64_t r, F f) {
  parallel_for(c, n * c * r > kParallelThreshold, [&](std::int64_t ch) { f(ch, ch * r); });
}

}  // namespace

template <typename T>
bool CpuKernels<T>::batchnorm_forward(const typename Kernels<T>::BatchNormForward& a) {
  const std::int64_t plane = a.c * a.r;
  const double count = static_cast<double>(a.n * a.r);
  for_each_channel(a.n, a.c, a.r, [&](std::int64_t ch, std::int64_t at) {
    double mean, var;
    if (a.running_mean) {
      mean = static_cast<double>(a.running_mean[ch]);
      var = static_cast<double>(a.running_var[ch]);
    } else {
      Lanes acc;
      const double k = a.n * a.r > 0 ? static_cast<double>(a.x[at]) : 0.0;
      for (std::int64_t i = 0; i < a.n; ++i) shifted_moments(a.x + i * plane + at, a.r, k, acc);
      const double d = combine(acc.s) / count;
      mean = k + d;
      var = std::max(0.0, combine(acc.q) / count - d * d);
    }
    const double inv = 1.0 / std::sqrt(var + static_cast<double>(a.eps));
    a.mean[ch] = static_cast<T>(mean);
    a.var[ch] = static_cast<T>(var);
    a.invstd[ch] = static_cast<T>(inv);
    const T scale = static_cast<T>(static_cast<double>(a.gamma[ch]) * inv);
    for (std::int64_t i = 0; i < a.n; ++i) {
      const std::int64_t off = i * plane + at;
      apply(a.x + off, a.skip ? a.skip + off : nullptr, a.y + off, a.r, a.mean[ch], scale, a.beta[ch], a.relu);
    }
  });
  return true;
}

template <typename T>
bool CpuKernels<T>::batchnorm_backward(const typename Kernels<T>::BatchNormBackward& a) {
  const std::int64_t plane = a.c * a.r;
  const double count = static_cast<double>(a.n * a.r);
  for_each_channel(a.n, a.c, a.r, [&](std::int64_t ch, std::int64_t at) {
    const double mean = static_cast<double>(a.mean[ch]), inv = static_cast<double>(a.invstd[ch]);
    // With the ReLU, the masked gradient g' is made once, in the first
    // visit, and kept where the second visit reads it: in dskip (which is
    // g'), else in dx (turned into dx in place), else a row at a time. The
    // second visit then reads two arrays, not three, and finds more of the
    // channel still in cache.
    T* kept = a.y ? (a.dskip ? a.dskip : a.dx) : nullptr;
    std::vector<T> row(a.y && !kept ? static_cast<std::size_t>(a.r) : 0);
    Lanes acc;
    for (std::int64_t i = 0; i < a.n; ++i) {
      const std::int64_t off = i * plane + at;
      const T* gi = a.g + off;
      if (a.y) {
        T* m = kept ? kept + off : row.data();
        relu_masked(a.y + off, gi, m, a.r);
        gi = m;
      }
      grad_sums(a.x + off, gi, a.r, mean, acc);
    }
    const double sg = combine(acc.s), sgx = combine(acc.q);
    a.dbeta[ch] = static_cast<T>(sg);
    a.dgamma[ch] = static_cast<T>(sgx * inv);
    if (!a.dx && !(a.dskip && !a.y)) return;
    // dx = gamma invstd (g' - sum(g') / m - xhat sum(g' xhat) / m), xhat = (x - mean) invstd.
    const double scale = static_cast<double>(a.gamma[ch]) * inv;
    const double k2 = a.training && count > 0 ? -scale * inv * inv * sgx / count : 0.0;
    const double k3 = a.training && count > 0 ? -scale * sg / count : 0.0;
    for (std::int64_t i = 0; i < a.n; ++i) {
      const std::int64_t off = i * plane + at;
      grad_apply(a.x + off, a.y ? kept + off : a.g + off, a.dx ? a.dx + off : nullptr,
                 a.dskip && !a.y ? a.dskip + off : nullptr, a.r, a.mean[ch], static_cast<T>(scale),
                 static_cast<T>(k2), static_cast<T>(k3));
    }
  });
  return true;
}

template bool CpuKernels<float>::batchnorm_forward(const Kernels<float>::BatchNormForward&);
template bool CpuKernels<double>::batchnorm_forward(const Kernels<double>::BatchNormForward&);
template bool CpuKernels<float>::batchnorm_backward(const Kernels<float>::BatchNormBackward&);
template bool CpuKernels<double>::batchnorm_backward(const Kernels<double>::BatchNormBackward&);

}  // namespace magmadnn::cpu
