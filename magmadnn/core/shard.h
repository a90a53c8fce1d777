/// @file shard.h
/// The one rule by which magmadnn splits n indices over `parts` ranks (a
/// model-parallel layer's weight axis, a hybrid plan's batch rows, the
/// distributed sampler's global batch in data/shard.h): in consecutive
/// runs, the first n mod parts ranks one index longer than the others (so
/// extents differ by at most one).
///
/// Why not dMath's row_block / col_block (blocks of ceil(n / parts)): that
/// split can leave the last ranks short by up to parts - 1 indices or with
/// nothing at all (n = 5 over 4 ranks gives 2, 2, 1, 0), and a rank with an
/// empty weight slice would still pay for every collective. This one gives
/// every rank floor(n / parts) or one more.
///
/// Requires 1 <= parts and 0 <= index < parts (not checked here: the
/// layers and ops check their group). Guarantees: the shards of all indices
/// tile [0, n) in rank order.
#pragma once

#include <cstdint>

namespace magmadnn {

struct Shard {
  std::int64_t offset = 0;  ///< first index held
  std::int64_t extent = 0;  ///< number of indices held
};

/// Rank `index`'s shard of n indices over `parts` ranks.
constexpr Shard shard_of(std::int64_t n, int parts, int index) noexcept {
  const std::int64_t base = n / parts, extra = n % parts, i = index;
  return {i * base + (i < extra ? i : extra), base + (i < extra ? 1 : 0)};
}

/// The longest shard (rank 0's).
constexpr std::int64_t max_shard(std::int64_t n, int parts) noexcept { return shard_of(n, parts, 0).extent; }

}  // namespace magmadnn
