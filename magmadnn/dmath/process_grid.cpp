#include "magmadnn/dmath/process_grid.h"

#include <algorithm>
#include <set>

#include "magmadnn/core/errors.h"

namespace magmadnn::distributed::dmath {

ProcessGrid::ProcessGrid(int rows, int cols, GridOrder order, std::vector<int> ranks)
    : rows_(rows), cols_(cols), order_(order), ranks_(std::move(ranks)) {
  MAGMADNN_CHECK(rows >= 1 && cols >= 1, ValueError,
                 "ProcessGrid: a grid needs at least one row and one column, got " << rows << " x " << cols);
  if (rows == 1 || cols == 1) order_ = GridOrder::row_major;
  if (ranks_.empty()) return;
  MAGMADNN_CHECK(static_cast<int>(ranks_.size()) == size(), ValueError,
                 "ProcessGrid: a " << rows << " x " << cols << " grid needs " << size() << " ranks, got "
                                   << ranks_.size());
  const std::set<int> distinct(ranks_.begin(), ranks_.end());
  MAGMADNN_CHECK(distinct.size() == ranks_.size() && *distinct.begin() >= 0, ValueError,
                 "ProcessGrid: the ranks of a grid must be distinct and non-negative");
  bool identity = true;
  for (std::size_t p = 0; p < ranks_.size(); ++p) identity = identity && ranks_[p] == static_cast<int>(p);
  if (identity) ranks_.clear();
}

int ProcessGrid::max_rank() const noexcept {
  return ranks_.empty() ? size() - 1 : *std::max_element(ranks_.begin(), ranks_.end());
}

int ProcessGrid::position(int rank) const noexcept {
  if (ranks_.empty()) return rank >= 0 && rank < size() ? rank : -1;
  const auto it = std::find(ranks_.begin(), ranks_.end(), rank);
  return it == ranks_.end() ? -1 : static_cast<int>(it - ranks_.begin());
}

int ProcessGrid::row_of(int rank) const noexcept {
  const int p = position(rank);
  if (p < 0) return -1;
  return order_ == GridOrder::row_major ? p / cols_ : p % rows_;
}

int ProcessGrid::col_of(int rank) const noexcept {
  const int p = position(rank);
  if (p < 0) return -1;
  return order_ == GridOrder::row_major ? p % cols_ : p / rows_;
}

// Position (i, j) here and (j, i) in the transpose have the same number, so
// the rank list carries over unchanged.
ProcessGrid ProcessGrid::transposed() const noexcept {
  ProcessGrid t;
  t.ranks_ = ranks_;
  t.rows_ = cols_;
  t.cols_ = rows_;
  t.order_ = (rows_ == 1 || cols_ == 1) ? GridOrder::row_major
             : order_ == GridOrder::row_major ? GridOrder::col_major
                                              : GridOrder::row_major;
  return t;
}

std::string ProcessGrid::str() const {
  std::string s = std::to_string(rows_) + "x" + std::to_string(cols_) +
                  (order_ == GridOrder::row_major ? " row-major" : " column-major");
  for (std::size_t p = 0; p < ranks_.size(); ++p) s += (p == 0 ? " on ranks " : ",") + std::to_string(ranks_[p]);
  return s;
}

ProcessGrid ProcessGrid::near_square(int ranks) {
  MAGMADNN_CHECK(ranks >= 1, ValueError, "ProcessGrid::near_square: needs at least one rank, got " << ranks);
  int rows = 1;
  for (int d = 1; d * d <= ranks; ++d)
    if (ranks % d == 0) rows = d;
  return ProcessGrid(rows, ranks / rows);
}

}  // namespace magmadnn::distributed::dmath
