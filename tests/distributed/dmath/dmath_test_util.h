// Random layouts and matrices for the dMath tests. Every rank draws the same
// sequence (one fixed seed per test), so all agree on the layouts without
// exchanging them, as the library itself requires.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/dmath/layout.h"

/// The world every test uses: the strategy tests' main() (make_communicator
/// "auto": MPI under a launcher, else one local rank) serves these too.
std::shared_ptr<magmadnn::distributed::Communicator> strategy_world();
inline magmadnn::distributed::Communicator& dmath_world() { return *strategy_world(); }

namespace dtest {

using magmadnn::distributed::dmath::GridOrder;
using magmadnn::distributed::dmath::Layout;
using magmadnn::distributed::dmath::LayoutKind;
using magmadnn::distributed::dmath::ProcessGrid;

inline constexpr LayoutKind kKinds[] = {LayoutKind::replicated, LayoutKind::row_block, LayoutKind::col_block,
                                        LayoutKind::block_cyclic};

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : gen_(seed) {}
  int uniform_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen_); }
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(gen_); }
  bool coin() { return uniform_int(0, 1) == 1; }

 private:
  std::mt19937_64 gen_;
};

/// The ranks a layout uses: half the time the whole group in order, else a
/// random subset (often all of it) in random order, so that subgroups,
/// ranks holding nothing and any rank order are exercised.
inline std::vector<int> some_ranks(Rng& rng, int group) {
  std::vector<int> ranks(static_cast<std::size_t>(group));
  for (int r = 0; r < group; ++r) ranks[static_cast<std::size_t>(r)] = r;
  if (rng.coin()) return ranks;
  for (int r = group - 1; r > 0; --r) std::swap(ranks[static_cast<std::size_t>(r)],
                                               ranks[static_cast<std::size_t>(rng.uniform_int(0, r))]);
  ranks.resize(static_cast<std::size_t>(rng.coin() ? group : rng.uniform_int(1, group)));
  return ranks;
}

/// A random layout of `kind` for a rows x cols matrix over `group` ranks:
/// any subgroup, grid shape and order, blocks of 1 to 5 (so sizes rarely
/// divide).
inline Layout random_layout(Rng& rng, LayoutKind kind, std::int64_t rows, std::int64_t cols, int group) {
  std::vector<int> ranks = some_ranks(rng, group);
  switch (kind) {
    case LayoutKind::replicated:
      return static_cast<int>(ranks.size()) == group ? Layout::replicated(rows, cols)
                                                     : Layout::replicated(rows, cols, ranks);
    case LayoutKind::row_block: return Layout::row_block(rows, cols, ranks);
    case LayoutKind::col_block: return Layout::col_block(rows, cols, ranks);
    // Shards layouts span the group's first ranks, in blocks of 1-3.
    case LayoutKind::row_shards: return Layout::row_shards(rows, cols, group, rng.uniform_int(1, 3));
    case LayoutKind::col_shards: return Layout::col_shards(rows, cols, group, rng.uniform_int(1, 3));
    case LayoutKind::block_cyclic: break;
  }
  const int size = static_cast<int>(ranks.size());
  std::vector<int> divisors;
  for (int d = 1; d <= size; ++d)
    if (size % d == 0) divisors.push_back(d);
  const int pr = divisors[static_cast<std::size_t>(rng.uniform_int(0, static_cast<int>(divisors.size()) - 1))];
  const GridOrder order = rng.coin() ? GridOrder::row_major : GridOrder::col_major;
  return Layout::block_cyclic(rows, cols, ProcessGrid(pr, size / pr, order, ranks), rng.uniform_int(1, 5),
                              rng.uniform_int(1, 5));
}

/// rows x cols values uniform in [-1, 1], row-major.
template <typename T>
std::vector<T> random_matrix(Rng& rng, std::int64_t rows, std::int64_t cols) {
  std::vector<T> m(static_cast<std::size_t>(rows * cols));
  for (T& v : m) v = static_cast<T>(rng.uniform(-1, 1));
  return m;
}

}  // namespace dtest
