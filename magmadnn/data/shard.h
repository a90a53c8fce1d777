/// @file shard.h
/// The distributed sampler's one rule (core/shard.h's): how a global batch of `rows` rows is
/// split among `size` ranks. Rank r takes a contiguous slice of the batch
/// (in the epoch's order, data::DataLoader::epoch_order, a function of
/// (seed, epoch) only); the slices are disjoint, cover the batch, appear in
/// rank order, and their sizes differ by at most one row (the first
/// rows % size ranks take one more). Every rank therefore runs the same
/// number of steps per epoch (one per global batch), and the global batches
/// do not depend on the number of ranks: a checkpoint resumes on another
/// rank count with the same batches.
///
///   data::RowRange s = data::shard_rows(100, /*rank=*/1, /*size=*/3);  // {34, 33}
///
/// Requires: rows >= 0 and 0 <= rank < size (ValueError otherwise).
/// Guarantees: a rank's count is 0 only when rows < size.
#pragma once

#include <cstdint>

#include "magmadnn/core/errors.h"
#include "magmadnn/core/shard.h"

namespace magmadnn::data {

/// Rows [begin, begin + count) of a batch.
struct RowRange {
  std::int64_t begin = 0;
  std::int64_t count = 0;
  bool operator==(const RowRange&) const = default;
};

/// Rank `rank`'s slice of a batch of `rows` rows split among `size` ranks.
inline RowRange shard_rows(std::int64_t rows, int rank, int size) {
  MAGMADNN_CHECK(rows >= 0 && size >= 1 && rank >= 0 && rank < size, ValueError,
                 "shard_rows: rank " << rank << " of " << size << " ranks, " << rows << " rows");
  const Shard s = shard_of(rows, size, rank);
  return {s.offset, s.extent};
}

}  // namespace magmadnn::data
