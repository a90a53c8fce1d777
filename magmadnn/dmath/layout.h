/// @file layout.h
/// Layout: how a rows x cols matrix is split over the ranks of a group.
/// Every rank holds the Layout of every matrix, so any rank can say who
/// owns which element without asking anyone (dMath: no master).
///
/// Six kinds, all but the first one description (2-D block-cyclic):
///  - replicated:   every rank of the group (or of a given subgroup) holds
///                  the whole matrix;
///  - row_block:    a P x 1 grid with blocks of ceil(rows / P) rows, so the
///                  p-th rank holds rows [p * mb, (p + 1) * mb) (the last ones
///                  may hold fewer, or none, when rows do not divide evenly);
///  - col_block:    the same over columns (a 1 x P grid);
///  - block_cyclic: a Pr x Pc ProcessGrid with mb x nb blocks dealt
///                  round-robin over it in both dimensions;
///  - row_shards:   a P x 1 grid whose blocks of `unit` rows are dealt
///                  consecutively by core/shard.h's rule (extents differ by
///                  at most one block): the model-parallel split of a batch;
///  - col_shards:   the same over columns: the split of a dense layer's
///                  columns (unit 1) or of an NCHW tensor's channels viewed as
///                  {N, C * H * W} (unit H * W).
/// A rank not on the grid holds nothing: a grid may use only some ranks of
/// the group (ranks 0 .. size - 1, or those of its rank list), which is how
/// a matrix lives on a subgroup, and redistribution between layouts on
/// different rank sets moves a matrix to a subgroup or a supergroup. It may
/// not name a rank the group lacks (DistMatrix checks).
///
/// Each rank stores its elements as one dense row-major local matrix of
/// local_rows(r) x local_cols(r), in increasing global order in both
/// dimensions.
///
/// Guarantees: the index maps are inverse to each other; equal distributions
/// compare equal whatever kind they were made as (a block size along a
/// dimension dealt to one process is stored as the whole extent); the
/// transpose of a layout keeps every element on its rank (transposed()).
/// A shards layout equals only another shards layout (or, on one rank, a
/// block one: both are then the whole matrix).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "magmadnn/dmath/block_cyclic.h"
#include "magmadnn/dmath/process_grid.h"

namespace magmadnn::distributed::dmath {

enum class LayoutKind : std::uint8_t {
  replicated = 0,
  row_block = 1,
  col_block = 2,
  block_cyclic = 3,
  row_shards = 4,
  col_shards = 5
};
const char* layout_kind_name(LayoutKind kind) noexcept;

class Layout {
 public:
  /// Throw ValueError on a negative size, a rank count below 1, a block
  /// size below 1, or a rank list with repeated or negative ranks.
  /// `group`/`ranks`: the ranks that hold the matrix (all, or 0 .. ranks - 1,
  /// when not given), in order for the block layouts.
  static Layout replicated(std::int64_t rows, std::int64_t cols, std::vector<int> group = {});
  static Layout row_block(std::int64_t rows, std::int64_t cols, int ranks);
  static Layout row_block(std::int64_t rows, std::int64_t cols, std::vector<int> ranks);
  static Layout col_block(std::int64_t rows, std::int64_t cols, int ranks);
  static Layout col_block(std::int64_t rows, std::int64_t cols, std::vector<int> ranks);
  static Layout block_cyclic(std::int64_t rows, std::int64_t cols, ProcessGrid grid, std::int64_t mb,
                             std::int64_t nb);
  /// Blocks of `unit` rows (columns) over ranks 0 .. ranks - 1, rank p
  /// holding shard_of(ceil(rows / unit), ranks, p) of them.
  static Layout row_shards(std::int64_t rows, std::int64_t cols, int ranks, std::int64_t unit = 1);
  static Layout col_shards(std::int64_t rows, std::int64_t cols, int ranks, std::int64_t unit = 1);

  LayoutKind kind() const noexcept { return kind_; }
  bool is_replicated() const noexcept { return kind_ == LayoutKind::replicated; }
  std::int64_t rows() const noexcept { return rows_; }
  std::int64_t cols() const noexcept { return cols_; }
  std::int64_t size() const noexcept { return rows_ * cols_; }
  const ProcessGrid& grid() const noexcept { return grid_; }
  std::int64_t mb() const noexcept { return mb_; }
  std::int64_t nb() const noexcept { return nb_; }

  /// The maps of the row (column) dimension over the grid's rows (columns).
  BlockCyclic1D row_map() const noexcept { return {rows_, mb_, grid_.rows(), shards()}; }
  BlockCyclic1D col_map() const noexcept { return {cols_, nb_, grid_.cols(), shards()}; }
  /// Whether blocks are dealt consecutively (row_shards, col_shards).
  bool shards() const noexcept { return kind_ == LayoutKind::row_shards || kind_ == LayoutKind::col_shards; }

  /// A replicated layout's subgroup; empty when every rank holds it.
  const std::vector<int>& group() const noexcept { return group_; }
  /// Whether `rank` holds part of the matrix (possibly an empty part).
  bool holds(int rank) const noexcept;
  /// The largest rank that holds part of the matrix; -1 when replicated on
  /// every rank.
  int max_rank() const noexcept;

  /// `rank`'s grid row (column): 0 for every holder of a replicated matrix,
  /// -1 for a rank that holds nothing.
  int grid_row(int rank) const noexcept { return is_replicated() ? (holds(rank) ? 0 : -1) : grid_.row_of(rank); }
  int grid_col(int rank) const noexcept { return is_replicated() ? (holds(rank) ? 0 : -1) : grid_.col_of(rank); }

  /// The extents of `rank`'s local matrix.
  std::int64_t local_rows(int rank) const noexcept;
  std::int64_t local_cols(int rank) const noexcept;
  std::int64_t local_size(int rank) const noexcept { return local_rows(rank) * local_cols(rank); }
  /// The largest local_size over the ranks.
  std::int64_t max_local_size() const noexcept;

  /// The rank that holds element (i, j); -1 when replicated (every rank does).
  int owner(std::int64_t i, std::int64_t j) const noexcept;
  /// Element (i, j)'s (row, col) in its owner's local matrix.
  std::pair<std::int64_t, std::int64_t> local_index(std::int64_t i, std::int64_t j) const noexcept;
  /// The global (row, col) of local (li, lj) on `rank`.
  std::pair<std::int64_t, std::int64_t> global_index(int rank, std::int64_t li, std::int64_t lj) const noexcept;

  /// The layout of the transposed matrix in which every rank holds the
  /// transpose of its local matrix here: cols x rows, nb x mb blocks, the
  /// transposed grid; row_block and col_block swap.
  Layout transposed() const noexcept;

  /// "block_cyclic 10x7 on 2x2 row-major, blocks 3x2"; "replicated 4x4 on
  /// ranks 1,2"
  std::string str() const;

  /// Equal distributions of equal shapes (the kind is not compared).
  bool operator==(const Layout& o) const noexcept;

 private:
  Layout(LayoutKind kind, std::int64_t rows, std::int64_t cols, ProcessGrid grid, std::int64_t mb, std::int64_t nb);
  LayoutKind kind_ = LayoutKind::replicated;
  std::int64_t rows_ = 0, cols_ = 0;
  ProcessGrid grid_;
  std::int64_t mb_ = 1, nb_ = 1;
  std::vector<int> group_;  // replicated only
};

}  // namespace magmadnn::distributed::dmath
