/// @file process_grid.h
/// ProcessGrid: the Pr x Pc arrangement of ranks that a 2-D block-cyclic
/// matrix is dealt over (dMath's process grid, ScaLAPACK's BLACS grid).
///
/// Rank r of the group sits at grid coordinate (row_of(r), col_of(r)),
/// numbered in row-major order (r = i * cols + j) or column-major order
/// (r = i + j * rows). Both orders are needed: the transpose of a matrix
/// dealt over a row-major Pr x Pc grid is dealt over the column-major
/// Pc x Pr grid with every rank keeping exactly its own elements, which is
/// how a transposed operand is used without moving it (layout.h).
///
/// Requires rows, cols >= 1. Ranks at or beyond size() are not on the grid:
/// row_of and col_of return -1 for them. A grid with one row or one column
/// numbers its ranks the same in both orders, and is stored row-major so that
/// equal grids compare equal.
#pragma once

#include <cstdint>
#include <string>

namespace magmadnn::distributed::dmath {

enum class GridOrder : std::uint8_t { row_major = 0, col_major = 1 };

class ProcessGrid {
 public:
  /// A 1 x 1 grid (one rank holds everything).
  ProcessGrid() = default;
  /// A rows x cols grid; throws ValueError unless both are at least 1.
  ProcessGrid(int rows, int cols, GridOrder order = GridOrder::row_major);

  int rows() const noexcept { return rows_; }
  int cols() const noexcept { return cols_; }
  GridOrder order() const noexcept { return order_; }
  int size() const noexcept { return rows_ * cols_; }

  /// The rank at grid coordinate (i, j), 0 <= i < rows(), 0 <= j < cols().
  int rank_of(int i, int j) const noexcept {
    return order_ == GridOrder::row_major ? i * cols_ + j : i + j * rows_;
  }
  /// The grid row (column) of `rank`, or -1 when the rank is not on the grid.
  int row_of(int rank) const noexcept;
  int col_of(int rank) const noexcept;

  /// The grid of the transposed matrix: cols x rows in the other order, so
  /// that rank r sits at (col_of(r), row_of(r)) in it.
  ProcessGrid transposed() const noexcept;

  /// "2x3 row-major"
  std::string str() const;

  bool operator==(const ProcessGrid&) const = default;

  /// The grid SUMMA prefers for `ranks` ranks: rows * cols == ranks with rows
  /// the largest divisor not above sqrt(ranks) (so 4 -> 2x2, 6 -> 2x3,
  /// 3 -> 1x3). Throws ValueError if ranks < 1.
  static ProcessGrid near_square(int ranks);

 private:
  int rows_ = 1, cols_ = 1;
  GridOrder order_ = GridOrder::row_major;
};

}  // namespace magmadnn::distributed::dmath
