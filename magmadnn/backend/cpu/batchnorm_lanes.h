/// @file batchnorm_lanes.h
/// What the batch normalisation kernels of the blocked and channels-last
/// layouts share (internal to backend/cpu): B-lane vectors of T, the fixed
/// split of the samples into pieces and of the pixels into chunks that
/// keeps their sums independent of the thread count, and the per-piece
/// partial sums. Both kernels add the same terms in the same order.
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace magmadnn::cpu::bn_lanes {

constexpr std::int64_t kPieces = 8;

// Samples [begin, end) of piece `p` of n.
struct Piece {
  std::int64_t begin, end;
};
inline Piece piece(std::int64_t n, std::int64_t pieces, std::int64_t p) {
  return {n * p / pieces, n * (p + 1) / pieces};
}

// Pixels a chunk of the T-precision sums may hold before they are added
// into double: float's rounding over 256 terms stays near 1e-5 of the sum's
// magnitude, where the shifted sums are small.
constexpr std::int64_t kChunk = 256;

// One pixel of a block: B lanes of T, as a vector GCC and Clang lower to
// the target's registers (one ymm for 8 floats on AVX2).
template <typename T, int B>
struct LanesOf {
  typedef T type __attribute__((vector_size(B * sizeof(T))));  // an alias template drops the attribute
};
template <typename T, int B>
using Lanes = typename LanesOf<T, B>::type;

template <typename V, typename T>
[[gnu::always_inline]] inline V load(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
template <typename V, typename T>
[[gnu::always_inline]] inline void store(T* p, V v) {
  std::memcpy(p, &v, sizeof(V));
}
template <typename V>
[[gnu::always_inline]] inline V splat(const double* a) {
  V v;
  for (int l = 0; l < static_cast<int>(sizeof(V) / sizeof(v[0])); ++l) v[l] = static_cast<decltype(+v[0])>(a[l]);
  return v;
}
template <typename V>
[[gnu::always_inline]] inline void add_into(double* a, V v) {
  for (int l = 0; l < static_cast<int>(sizeof(V) / sizeof(v[0])); ++l) a[l] += static_cast<double>(v[l]);
}

// g where y > 0, else 0 (the ReLU's gradient, as the unary op's), for one
// pixel; without the ReLU (y null at the call sites) g itself.
template <typename V, bool RELU, typename T>
[[gnu::always_inline]] inline V masked(const T* y, const T* g) {
  const V gv = load<V>(g);
  if constexpr (RELU) {
    const auto pos = load<V>(y) > V{};
    return reinterpret_cast<V>(pos & reinterpret_cast<decltype(pos)>(gv));
  } else {
    return gv;
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

}  // namespace magmadnn::cpu::bn_lanes
