/// @file local_runs.h
/// for_each_local_run: a rank's local matrix walked as runs of elements that
/// are consecutive both in a local row and in the global row they belong to
/// (a block's width at most, a shard's with shards), so that copies between a local matrix and a
/// whole one move whole runs. Internal to dmath.
#pragma once

#include <algorithm>
#include <cstdint>

#include "magmadnn/dmath/layout.h"

namespace magmadnn::distributed::dmath::detail {

/// Calls f(li, lj, i, j, len) for each run: local (li, lj .. lj + len) of
/// `rank` is global (i, j .. j + len). Nothing for a rank holding nothing.
template <typename F>
void for_each_local_run(const Layout& l, int rank, F&& f) {
  const int r = l.grid_row(rank), c = l.grid_col(rank);
  if (r < 0) return;
  const BlockCyclic1D rmap = l.row_map(), cmap = l.col_map();
  const std::int64_t rows = rmap.extent(r), cols = cmap.extent(c);
  for (std::int64_t li = 0; li < rows; ++li) {
    const std::int64_t i = rmap.global_index(li, r);
    for (std::int64_t lj = 0; lj < cols;) {
      const std::int64_t len = cmap.run_from(lj, c);
      f(li, lj, i, cmap.global_index(lj, c), len);
      lj += len;
    }
  }
}

}  // namespace magmadnn::distributed::dmath::detail
