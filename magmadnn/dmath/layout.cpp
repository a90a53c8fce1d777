#include "magmadnn/dmath/layout.h"

#include <algorithm>
#include <sstream>

#include "magmadnn/core/errors.h"

namespace magmadnn::distributed::dmath {

const char* layout_kind_name(LayoutKind kind) noexcept {
  switch (kind) {
    case LayoutKind::replicated: return "replicated";
    case LayoutKind::row_block: return "row_block";
    case LayoutKind::col_block: return "col_block";
    case LayoutKind::block_cyclic: return "block_cyclic";
    case LayoutKind::row_shards: return "row_shards";
    case LayoutKind::col_shards: return "col_shards";
  }
  return "?";
}

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

Layout::Layout(LayoutKind kind, std::int64_t rows, std::int64_t cols, ProcessGrid grid, std::int64_t mb,
               std::int64_t nb)
    : kind_(kind), rows_(rows), cols_(cols), grid_(grid), mb_(mb), nb_(nb) {
  MAGMADNN_CHECK(rows >= 0 && cols >= 0, ValueError,
                 "Layout: a matrix cannot have negative extents, got " << rows << " x " << cols);
  MAGMADNN_CHECK(mb >= 1 && nb >= 1, ValueError,
                 "Layout: block sizes must be at least 1, got " << mb << " x " << nb << " for a " << rows << " x "
                                                                << cols << " matrix");
  // A dimension dealt to a single process is one block whatever its size:
  // storing it so makes equal distributions compare equal.
  if (grid_.rows() == 1) mb_ = std::max<std::int64_t>(rows_, 1);
  if (grid_.cols() == 1) nb_ = std::max<std::int64_t>(cols_, 1);
}

Layout Layout::replicated(std::int64_t rows, std::int64_t cols, std::vector<int> group) {
  Layout l(LayoutKind::replicated, rows, cols, ProcessGrid(), 1, 1);
  if (!group.empty()) {
    // Checked (distinct, non-negative) as a grid's rank list would be.
    (void)ProcessGrid(1, static_cast<int>(group.size()), GridOrder::row_major, group);
    std::sort(group.begin(), group.end());
    l.group_ = std::move(group);
  }
  return l;
}

Layout Layout::row_block(std::int64_t rows, std::int64_t cols, int ranks) {
  MAGMADNN_CHECK(ranks >= 1, ValueError, "Layout::row_block: needs at least one rank, got " << ranks);
  return Layout(LayoutKind::row_block, rows, cols, ProcessGrid(ranks, 1),
                std::max<std::int64_t>(1, ceil_div(rows, ranks)), 1);
}

Layout Layout::row_block(std::int64_t rows, std::int64_t cols, std::vector<int> ranks) {
  MAGMADNN_CHECK(!ranks.empty(), ValueError, "Layout::row_block: needs at least one rank");
  const int p = static_cast<int>(ranks.size());
  return Layout(LayoutKind::row_block, rows, cols, ProcessGrid(p, 1, GridOrder::row_major, std::move(ranks)),
                std::max<std::int64_t>(1, ceil_div(rows, p)), 1);
}

Layout Layout::col_block(std::int64_t rows, std::int64_t cols, int ranks) {
  MAGMADNN_CHECK(ranks >= 1, ValueError, "Layout::col_block: needs at least one rank, got " << ranks);
  return Layout(LayoutKind::col_block, rows, cols, ProcessGrid(1, ranks), 1,
                std::max<std::int64_t>(1, ceil_div(cols, ranks)));
}

Layout Layout::col_block(std::int64_t rows, std::int64_t cols, std::vector<int> ranks) {
  MAGMADNN_CHECK(!ranks.empty(), ValueError, "Layout::col_block: needs at least one rank");
  const int p = static_cast<int>(ranks.size());
  return Layout(LayoutKind::col_block, rows, cols, ProcessGrid(1, p, GridOrder::row_major, std::move(ranks)), 1,
                std::max<std::int64_t>(1, ceil_div(cols, p)));
}

Layout Layout::row_shards(std::int64_t rows, std::int64_t cols, int ranks, std::int64_t unit) {
  MAGMADNN_CHECK(ranks >= 1, ValueError, "Layout::row_shards: needs at least one rank, got " << ranks);
  if (ranks == 1) return row_block(rows, cols, 1);
  return Layout(LayoutKind::row_shards, rows, cols, ProcessGrid(ranks, 1), unit, 1);
}

Layout Layout::col_shards(std::int64_t rows, std::int64_t cols, int ranks, std::int64_t unit) {
  MAGMADNN_CHECK(ranks >= 1, ValueError, "Layout::col_shards: needs at least one rank, got " << ranks);
  if (ranks == 1) return col_block(rows, cols, 1);
  return Layout(LayoutKind::col_shards, rows, cols, ProcessGrid(1, ranks), 1, unit);
}

bool Layout::holds(int rank) const noexcept {
  if (!is_replicated()) return grid_.row_of(rank) >= 0;
  if (rank < 0) return false;
  return group_.empty() || std::binary_search(group_.begin(), group_.end(), rank);
}

int Layout::max_rank() const noexcept {
  if (!is_replicated()) return grid_.max_rank();
  return group_.empty() ? -1 : group_.back();
}

Layout Layout::block_cyclic(std::int64_t rows, std::int64_t cols, ProcessGrid grid, std::int64_t mb, std::int64_t nb) {
  return Layout(LayoutKind::block_cyclic, rows, cols, grid, mb, nb);
}

std::int64_t Layout::local_rows(int rank) const noexcept {
  const int i = grid_row(rank);
  return i < 0 ? 0 : is_replicated() ? rows_ : row_map().extent(i);
}

std::int64_t Layout::local_cols(int rank) const noexcept {
  const int j = grid_col(rank);
  return j < 0 ? 0 : is_replicated() ? cols_ : col_map().extent(j);
}

std::int64_t Layout::max_local_size() const noexcept {
  return is_replicated() ? size() : row_map().max_extent() * col_map().max_extent();
}

int Layout::owner(std::int64_t i, std::int64_t j) const noexcept {
  if (is_replicated()) return -1;
  return grid_.rank_of(row_map().owner(i), col_map().owner(j));
}

std::pair<std::int64_t, std::int64_t> Layout::local_index(std::int64_t i, std::int64_t j) const noexcept {
  if (is_replicated()) return {i, j};
  return {row_map().local_index(i), col_map().local_index(j)};
}

std::pair<std::int64_t, std::int64_t> Layout::global_index(int rank, std::int64_t li, std::int64_t lj) const noexcept {
  if (is_replicated()) return {li, lj};
  return {row_map().global_index(li, grid_.row_of(rank)), col_map().global_index(lj, grid_.col_of(rank))};
}

Layout Layout::transposed() const noexcept {
  LayoutKind kind = kind_;
  if (kind == LayoutKind::row_block) kind = LayoutKind::col_block;
  else if (kind == LayoutKind::col_block) kind = LayoutKind::row_block;
  else if (kind == LayoutKind::row_shards) kind = LayoutKind::col_shards;
  else if (kind == LayoutKind::col_shards) kind = LayoutKind::row_shards;
  Layout t = *this;
  t.kind_ = kind;
  t.rows_ = cols_;
  t.cols_ = rows_;
  t.grid_ = grid_.transposed();
  t.mb_ = nb_;
  t.nb_ = mb_;
  return t;
}

std::string Layout::str() const {
  std::ostringstream s;
  s << layout_kind_name(kind_) << ' ' << rows_ << 'x' << cols_;
  if (!is_replicated()) s << " on " << grid_.str() << ", blocks " << mb_ << 'x' << nb_;
  for (std::size_t p = 0; p < group_.size(); ++p) s << (p == 0 ? " on ranks " : ",") << group_[p];
  return s.str();
}

bool Layout::operator==(const Layout& o) const noexcept {
  if (rows_ != o.rows_ || cols_ != o.cols_ || is_replicated() != o.is_replicated()) return false;
  if (is_replicated()) return group_ == o.group_;
  return grid_ == o.grid_ && mb_ == o.mb_ && nb_ == o.nb_ && shards() == o.shards();
}

}  // namespace magmadnn::distributed::dmath
