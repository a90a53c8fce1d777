/// @file gathered.h
/// The whole matrix from an allgather of every rank's local matrix, each
/// padded to the layout's largest (redistribute's path onto every rank, and
/// Replica's). Internal to dmath.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "magmadnn/dmath/local_runs.h"

namespace magmadnn::distributed::dmath::detail {

/// `mine` padded to `slot` elements: the send block of the allgather.
template <typename S>
void pad_local(const S* local, std::int64_t n, std::int64_t slot, std::vector<S>& mine) {
  mine.assign(static_cast<std::size_t>(slot), S(0));
  std::copy_n(local, n, mine.begin());
}

/// Writes into `whole` (rows x cols, row-major) every rank's block of `all`
/// (ranks blocks of `slot` elements, rank order), converting S to D.
template <typename S, typename D>
void unpack_gathered(const Layout& l, int ranks, const S* all, std::int64_t slot, D* whole) {
  const std::int64_t cols = l.cols();
  for (int s = 0; s < ranks; ++s) {
    const S* block = all + slot * s;
    const std::int64_t ld = l.local_cols(s);
    for_each_local_run(l, s, [&](std::int64_t li, std::int64_t lj, std::int64_t i, std::int64_t j, std::int64_t len) {
      std::transform(block + li * ld + lj, block + li * ld + lj + len, whole + i * cols + j,
                     [](S v) { return static_cast<D>(v); });
    });
  }
}

}  // namespace magmadnn::distributed::dmath::detail
