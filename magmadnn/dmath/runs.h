/// @file runs.h
/// Runs: one dimension of a redistribution, cut where either layout starts
/// a block. Inside a run every index has the same source and target
/// coordinate, and the run is contiguous in both local matrices, so a row's
/// share of a message is a few memcpy-able pieces. Internal to dmath.
#pragma once

#include <cstdint>
#include <vector>

#include "magmadnn/dmath/block_cyclic.h"

namespace magmadnn::distributed::dmath::detail {

struct Run {
  std::int64_t begin = 0, end = 0;  // global indices [begin, end)
  int src = 0, dst = 0;             // the coordinates that hold it before and after
};

/// The runs of 0..from.n-1 (from.n == to.n), in increasing order.
inline std::vector<Run> runs(const BlockCyclic1D& from, const BlockCyclic1D& to) {
  std::vector<Run> out;
  for (std::int64_t g = 0; g < from.n;) {
    const std::int64_t end = std::min(from.block_end(g), to.block_end(g));
    out.push_back({g, end, from.owner(g), to.owner(g)});
    g = end;
  }
  return out;
}

/// How many indices of `rs` go from coordinate `src` to `dst`.
inline std::int64_t count(const std::vector<Run>& rs, int src, int dst) {
  std::int64_t n = 0;
  for (const Run& r : rs)
    if (r.src == src && r.dst == dst) n += r.end - r.begin;
  return n;
}

}  // namespace magmadnn::distributed::dmath::detail
