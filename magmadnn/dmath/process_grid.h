/// @file process_grid.h
/// ProcessGrid: the Pr x Pc arrangement of ranks that a 2-D block-cyclic
/// matrix is dealt over (dMath's process grid, ScaLAPACK's BLACS grid).
///
/// Grid positions are numbered in row-major order (p = i * cols + j) or
/// column-major order (p = i + j * rows), and position p holds rank p of
/// the communicator, or ranks[p] when a rank list is given: a grid may use
/// any subset of a group's ranks, in any order (dMath's matrices on a
/// subgroup). Both orders are needed: the transpose of a matrix dealt over a
/// row-major Pr x Pc grid is dealt over the column-major Pc x Pr grid with
/// every rank keeping exactly its own elements, which is how a transposed
/// operand is used without moving it (layout.h).
///
/// Requires rows, cols >= 1, and a rank list (if any) of rows * cols
/// distinct ranks >= 0 (ValueError otherwise). Ranks not on the grid get -1
/// from row_of and col_of. Stored normalised so that equal grids compare
/// equal: a grid with one row or one column numbers its positions the same
/// in both orders and is stored row-major, and a rank list 0, 1, ... is
/// stored as none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace magmadnn::distributed::dmath {

enum class GridOrder : std::uint8_t { row_major = 0, col_major = 1 };

class ProcessGrid {
 public:
  /// A 1 x 1 grid (one rank holds everything).
  ProcessGrid() = default;
  /// A rows x cols grid over ranks 0 .. rows * cols - 1, or over `ranks`
  /// (the rank at each position, in the order's numbering).
  ProcessGrid(int rows, int cols, GridOrder order = GridOrder::row_major, std::vector<int> ranks = {});

  int rows() const noexcept { return rows_; }
  int cols() const noexcept { return cols_; }
  GridOrder order() const noexcept { return order_; }
  int size() const noexcept { return rows_ * cols_; }
  /// The rank at each position; empty when position p holds rank p.
  const std::vector<int>& ranks() const noexcept { return ranks_; }
  /// The largest rank on the grid.
  int max_rank() const noexcept;

  /// The rank at grid coordinate (i, j), 0 <= i < rows(), 0 <= j < cols().
  int rank_of(int i, int j) const noexcept {
    const int p = order_ == GridOrder::row_major ? i * cols_ + j : i + j * rows_;
    return ranks_.empty() ? p : ranks_[static_cast<std::size_t>(p)];
  }
  /// The grid row (column) of `rank`, or -1 when the rank is not on the grid.
  int row_of(int rank) const noexcept;
  int col_of(int rank) const noexcept;

  /// The grid of the transposed matrix: cols x rows in the other order, so
  /// that rank r sits at (col_of(r), row_of(r)) in it.
  ProcessGrid transposed() const noexcept;

  /// "2x3 row-major", then the rank list if there is one: "on ranks 3,1".
  std::string str() const;

  bool operator==(const ProcessGrid&) const = default;

  /// The grid SUMMA prefers for `ranks` ranks: rows * cols == ranks with rows
  /// the largest divisor not above sqrt(ranks) (so 4 -> 2x2, 6 -> 2x3,
  /// 3 -> 1x3), over ranks 0 .. ranks - 1. Throws ValueError if ranks < 1.
  static ProcessGrid near_square(int ranks);

 private:
  // The position of `rank` on the grid, or -1.
  int position(int rank) const noexcept;
  int rows_ = 1, cols_ = 1;
  GridOrder order_ = GridOrder::row_major;
  std::vector<int> ranks_;
};

}  // namespace magmadnn::distributed::dmath
