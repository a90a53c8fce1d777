// Batch normalisation's passes over channels-last tensors (batchnorm_nhwc.h):
// pixels in memory order, the C channels of each pixel as C / B vectors.
// The sums keep one accumulator vector per block (even and odd pixels
// apart, as the blocked kernels), which for C = 2048 is 32 KB: they stay
// in the L1 cache while the input streams past. Tasks: the pieces of the
// samples for the sums (as the blocked kernels), rows for the rest.
#include "magmadnn/backend/cpu/batchnorm_nhwc.h"

#include <algorithm>
#include <vector>

#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/backend/cpu/simd_clones.h"

namespace magmadnn::cpu::nhwc {
namespace {

using namespace bn_lanes;

// Rows (pixels of all channels) per task of the elementwise passes.
constexpr std::int64_t kRowsPerTask = 64;

bool parallel(Dims d) { return d.n * d.c * d.r > kParallelThreshold; }

// f(first row, end row) over the n * r rows, in tasks of kRowsPerTask.
template <typename F>
void for_rows(Dims d, F&& f) {
  const std::int64_t rows = d.n * d.r, tasks = (rows + kRowsPerTask - 1) / kRowsPerTask;
  parallel_for(tasks, parallel(d), [&](std::int64_t t) {
    f(t * kRowsPerTask, std::min(rows, (t + 1) * kRowsPerTask));
  });
}

// The sums of piece p: for each sample, chunk and pixel (even and odd
// pixels into separate accumulators, one vector per block, added into the
// partial sums at each chunk's end), the blocked kernels' order. With
// GRAD, the sums of g' and g' (x - m) (g' masked by y > 0 when RELU, and
// written to kept when that is not null); else of x - m and (x - m)^2.
// The hot loops live in this function, not in a lambda, so that its SIMD
// clones hold them.
template <typename T, int B, bool GRAD, bool RELU>
MAGMADNN_SIMD_CLONES void piece_sums(const T* x, const T* y, const T* g, T* kept, Dims d, std::int64_t pieces,
                                     std::int64_t p, const double* m_, Partials& part) {
  using V = Lanes<T, B>;
  const std::int64_t blocks = d.c / B;
  // Vectors kept as T arrays and moved by load/store: a std::vector of V
  // loses V's alignment (GCC drops a template argument's attributes).
  std::vector<T> m(static_cast<std::size_t>(d.c)), acc(static_cast<std::size_t>(4 * d.c));
  for (std::int64_t ch = 0; ch < d.c; ++ch) m[ch] = static_cast<T>(m_[ch]);
  T *s0 = acc.data(), *q0 = s0 + d.c, *s1 = q0 + d.c, *q1 = s1 + d.c;
  auto pixel = [&](std::int64_t off, T* s, T* q) __attribute__((always_inline)) {
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t e = off + b * B;
      const V mb = load<V>(m.data() + b * B);
      V sb = load<V>(s + b * B), qb = load<V>(q + b * B);
      if constexpr (GRAD) {
        const V gv = RELU ? masked<V, true>(y + e, g + e) : load<V>(g + e);
        if (kept) store(kept + e, gv);
        sb += gv, qb += gv * (load<V>(x + e) - mb);
      } else {
        const V v = load<V>(x + e) - mb;
        sb += v, qb += v * v;
      }
      store(s + b * B, sb), store(q + b * B, qb);
    }
  };
  const Piece pc = piece(d.n, pieces, p);
  for (std::int64_t i = pc.begin; i < pc.end; ++i) {
    for (std::int64_t c0 = 0; c0 < d.r; c0 += kChunk) {
      const std::int64_t c1 = std::min(d.r, c0 + kChunk);
      std::fill(acc.begin(), acc.end(), T(0));
      std::int64_t j = c0;
      for (; j + 2 <= c1; j += 2) pixel((i * d.r + j) * d.c, s0, q0), pixel((i * d.r + j + 1) * d.c, s1, q1);
      if (j < c1) pixel((i * d.r + j) * d.c, s0, q0);
      for (std::int64_t b = 0; b < blocks; ++b) {
        add_into(part.s_at(b, p), load<V>(s0 + b * B) + load<V>(s1 + b * B));
        add_into(part.q_at(b, p), load<V>(q0 + b * B) + load<V>(q1 + b * B));
      }
    }
  }
}

// Rows [r0, r1) of y = f((x - mean) * scale + shift (+ skip)).
template <typename T, int B>
MAGMADNN_SIMD_CLONES void apply_rows(const T* x, const T* skip, T* y, std::int64_t c, std::int64_t r0,
                                     std::int64_t r1, const T* mean, const T* scale, const T* shift, bool relu) {
  using V = Lanes<T, B>;
  for (std::int64_t row = r0; row < r1; ++row) {
    const std::int64_t o = row * c;
    for (std::int64_t ch = 0; ch < c; ch += B) {
      V v = (load<V>(x + o + ch) - load<V>(mean + ch)) * load<V>(scale + ch) + load<V>(shift + ch);
      if (skip) v += load<V>(skip + o + ch);
      if (relu) v = v > V{} ? v : V{};
      store(y + o + ch, v);
    }
  }
}

// Rows [r0, r1) of dx = scale * g' + k2 * (x - mean) + k3.
template <typename T, int B>
MAGMADNN_SIMD_CLONES void grad_rows(const T* x, const T* y, const T* g, T* dx, std::int64_t c, std::int64_t r0,
                                    std::int64_t r1, const T* mean, const T* scale, const T* k2, const T* k3,
                                    bool relu) {
  using V = Lanes<T, B>;
  for (std::int64_t row = r0; row < r1; ++row) {
    const std::int64_t o = row * c;
    for (std::int64_t ch = 0; ch < c; ch += B) {
      const V gv = relu ? masked<V, true>(y + o + ch, g + o + ch) : load<V>(g + o + ch);
      store(dx + o + ch,
            load<V>(scale + ch) * gv + load<V>(k2 + ch) * (load<V>(x + o + ch) - load<V>(mean + ch)) + load<V>(k3 + ch));
    }
  }
}

}  // namespace

template <typename T, int B>
void moments(const T* x, Dims d, std::int64_t pieces, const double* shift, Partials& part) {
  parallel_for(pieces, parallel(d), [&](std::int64_t p) {
    piece_sums<T, B, false, false>(x, nullptr, nullptr, nullptr, d, pieces, p, shift, part);
  });
}

template <typename T, int B>
void apply(const T* x, const T* skip, T* y, Dims d, const T* mean, const T* scale, const T* shift, bool relu) {
  for_rows(d, [&](std::int64_t r0, std::int64_t r1) {
    apply_rows<T, B>(x, skip, y, d.c, r0, r1, mean, scale, shift, relu);
  });
}

template <typename T, int B>
void grad_sums(const T* x, const T* y, const T* g, T* kept, Dims d, std::int64_t pieces, const double* mean,
               bool relu, Partials& part) {
  parallel_for(pieces, parallel(d), [&](std::int64_t p) {
    if (relu) {
      piece_sums<T, B, true, true>(x, y, g, kept, d, pieces, p, mean, part);
    } else {
      piece_sums<T, B, true, false>(x, y, g, kept, d, pieces, p, mean, part);
    }
  });
}

template <typename T, int B>
void grad_apply(const T* x, const T* y, const T* g, T* dx, Dims d, const T* mean, const T* scale, const T* k2,
                const T* k3, bool relu) {
  for_rows(d, [&](std::int64_t r0, std::int64_t r1) {
    grad_rows<T, B>(x, y, g, dx, d.c, r0, r1, mean, scale, k2, k3, relu);
  });
}

#define MAGMADNN_NHWC_INSTANTIATE(T, B)                                                                         \
  template void moments<T, B>(const T*, Dims, std::int64_t, const double*, Partials&);                          \
  template void apply<T, B>(const T*, const T*, T*, Dims, const T*, const T*, const T*, bool);                  \
  template void grad_sums<T, B>(const T*, const T*, const T*, T*, Dims, std::int64_t, const double*, bool,      \
                                Partials&);                                                                     \
  template void grad_apply<T, B>(const T*, const T*, const T*, T*, Dims, const T*, const T*, const T*, const T*, \
                                 bool);
MAGMADNN_NHWC_INSTANTIATE(float, 16)
MAGMADNN_NHWC_INSTANTIATE(double, 16)
MAGMADNN_NHWC_INSTANTIATE(float, 8)  // for the drivers' B = 8 instances, which never call them
MAGMADNN_NHWC_INSTANTIATE(double, 8)
#undef MAGMADNN_NHWC_INSTANTIATE

}  // namespace magmadnn::cpu::nhwc
