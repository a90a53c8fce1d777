/// @file block_cyclic.h
/// BlockCyclic1D: the map of one matrix dimension dealt in blocks over a
/// line of processes (ScaLAPACK's INDXG2P / INDXG2L / INDXL2G / NUMROC).
///
/// Indices 0..n-1 are cut into blocks of `block` (the last may be short);
/// block b goes to process b mod procs, which stores its blocks one after the
/// other. So global index g lives on process (g / block) mod procs at local
/// index (g / (block * procs)) * block + g mod block, and the local extents
/// differ by at most one block when n does not divide evenly (a process may
/// hold nothing at all).
///
/// With `shards` set the blocks are dealt consecutively instead, by
/// core/shard.h's rule (the first blocks mod procs processes one block
/// more than the others): process p holds one run of whole blocks, the
/// model-parallel layers' split of columns, channels or batch rows (block 1,
/// or H * W for channels). Every map below is then the run's offset.
///
/// Requires n >= 0, block >= 1, procs >= 1, 0 <= g < n, 0 <= p < procs and
/// l < extent(p); these are not checked here (Layout checks its arguments).
#pragma once

#include <algorithm>
#include <cstdint>

namespace magmadnn::distributed::dmath {

struct BlockCyclic1D {
  std::int64_t n = 0;
  std::int64_t block = 1;
  int procs = 1;
  bool shards = false;

  /// The process that holds global index g.
  int owner(std::int64_t g) const noexcept {
    if (!shards) return static_cast<int>((g / block) % procs);
    const std::int64_t b = g / block, base = blocks() / procs, extra = blocks() % procs;
    return static_cast<int>(b < extra * (base + 1) ? b / (base + 1) : extra + (b - extra * (base + 1)) / base);
  }
  /// g's index in its owner's local storage.
  std::int64_t local_index(std::int64_t g) const noexcept {
    return shards ? g - first(owner(g)) : (g / block / procs) * block + g % block;
  }
  /// The global index of local index l on process p.
  std::int64_t global_index(std::int64_t l, int p) const noexcept {
    return shards ? first(p) + l : ((l / block) * procs + p) * block + l % block;
  }
  /// How many indices process p holds.
  std::int64_t extent(int p) const noexcept {
    if (shards) return std::max<std::int64_t>(0, std::min(n, first(p + 1)) - first(p));
    const std::int64_t blocks = n / block, rest = n % block;
    std::int64_t e = (blocks / procs) * block;
    const std::int64_t extra = blocks % procs;
    if (p < extra) e += block;
    else if (p == extra) e += rest;
    return e;
  }
  /// The largest extent over the processes: process 0's, as it takes the
  /// first block of every round (the first, longest shard).
  std::int64_t max_extent() const noexcept { return extent(0); }
  /// The first global index after g where a block starts (or n); with
  /// shards, where the next process's run starts.
  std::int64_t block_end(std::int64_t g) const noexcept {
    return std::min(n, shards ? first(owner(g) + 1) : (g / block + 1) * block);
  }
  /// How many local indices from l on process p are consecutive globally.
  std::int64_t run_from(std::int64_t l, int p) const noexcept {
    return shards ? extent(p) - l : std::min(extent(p) - l, block - l % block);
  }

  bool operator==(const BlockCyclic1D&) const = default;

 private:
  std::int64_t blocks() const noexcept { return (n + block - 1) / block; }
  // The first global index of process p's run of blocks (p <= procs).
  std::int64_t first(int p) const noexcept {
    const std::int64_t base = blocks() / procs, extra = blocks() % procs;
    return (p * base + std::min<std::int64_t>(p, extra)) * block;
  }
};

}  // namespace magmadnn::distributed::dmath
