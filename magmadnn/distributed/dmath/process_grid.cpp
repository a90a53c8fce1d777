#include "magmadnn/distributed/dmath/process_grid.h"

#include "magmadnn/core/errors.h"

namespace magmadnn::distributed::dmath {

ProcessGrid::ProcessGrid(int rows, int cols, GridOrder order) : rows_(rows), cols_(cols), order_(order) {
  MAGMADNN_CHECK(rows >= 1 && cols >= 1, ValueError,
                 "ProcessGrid: a grid needs at least one row and one column, got " << rows << " x " << cols);
  if (rows == 1 || cols == 1) order_ = GridOrder::row_major;
}

int ProcessGrid::row_of(int rank) const noexcept {
  if (rank < 0 || rank >= size()) return -1;
  return order_ == GridOrder::row_major ? rank / cols_ : rank % rows_;
}

int ProcessGrid::col_of(int rank) const noexcept {
  if (rank < 0 || rank >= size()) return -1;
  return order_ == GridOrder::row_major ? rank % cols_ : rank / rows_;
}

ProcessGrid ProcessGrid::transposed() const noexcept {
  ProcessGrid t;
  t.rows_ = cols_;
  t.cols_ = rows_;
  t.order_ = (rows_ == 1 || cols_ == 1) ? GridOrder::row_major
             : order_ == GridOrder::row_major ? GridOrder::col_major
                                              : GridOrder::row_major;
  return t;
}

std::string ProcessGrid::str() const {
  return std::to_string(rows_) + "x" + std::to_string(cols_) +
         (order_ == GridOrder::row_major ? " row-major" : " column-major");
}

ProcessGrid ProcessGrid::near_square(int ranks) {
  MAGMADNN_CHECK(ranks >= 1, ValueError, "ProcessGrid::near_square: needs at least one rank, got " << ranks);
  int rows = 1;
  for (int d = 1; d * d <= ranks; ++d)
    if (ranks % d == 0) rows = d;
  return ProcessGrid(rows, ranks / rows);
}

}  // namespace magmadnn::distributed::dmath
