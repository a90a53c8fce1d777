// Redistribution between every pair of layout kinds, with random shapes,
// grids (the whole group or fewer ranks, either order) and block sizes:
// every rank's result is exactly what it holds of the matrix in the target
// layout, also when the precision changes on the way.
#include <gtest/gtest.h>

#include "dmath_test_util.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/dmath/dist_matrix.h"
#include "magmadnn/dmath/redistribute.h"
#include "magmadnn/comm/local_communicator.h"

using namespace dtest;
using magmadnn::distributed::dmath::DistMatrix;

namespace {

// T -> T, then T -> U (the other precision).
template <typename T, typename U>
void every_pair(std::uint64_t seed) {
  auto& comm = dmath_world();
  Rng rng(seed);
  for (LayoutKind from_kind : kKinds) {
    for (LayoutKind to_kind : kKinds) {
      for (int trial = 0; trial < 6; ++trial) {
        const std::int64_t rows = rng.uniform_int(1, 17), cols = rng.uniform_int(1, 17);
        const Layout from = random_layout(rng, from_kind, rows, cols, comm.size());
        const Layout to = random_layout(rng, to_kind, rows, cols, comm.size());
        const std::vector<T> global = random_matrix<T>(rng, rows, cols);
        SCOPED_TRACE(from.str() + " -> " + to.str() + " on " + std::to_string(comm.size()) + " ranks");
        const auto x = DistMatrix<T>::from_global(comm, from, global.data());
        const auto y = x.redistribute(to);
        const auto expected = DistMatrix<T>::from_global(comm, to, global.data());
        ASSERT_EQ(y.local_rows(), expected.local_rows());
        ASSERT_EQ(y.local_cols(), expected.local_cols());
        for (std::int64_t i = 0; i < y.local_rows() * y.local_cols(); ++i)
          ASSERT_EQ(y.local_data()[i], expected.local_data()[i]) << "local element " << i;
        ASSERT_EQ(y.to_global(), global);

        const auto z = x.template redistribute<U>(to);
        const std::vector<U> converted(global.begin(), global.end());
        const auto expected_u = DistMatrix<U>::from_global(comm, to, converted.data());
        for (std::int64_t i = 0; i < z.local_rows() * z.local_cols(); ++i)
          ASSERT_EQ(z.local_data()[i], expected_u.local_data()[i]) << "converted local element " << i;
      }
    }
  }
}

}  // namespace

TEST(DmathRedistribute, EveryPairOfLayoutsFloat) { every_pair<float, double>(101); }
TEST(DmathRedistribute, EveryPairOfLayoutsDouble) { every_pair<double, float>(102); }

// Onto a subgroup in reverse rank order, replicated on one rank, and back
// onto the whole group.
TEST(DmathRedistribute, ToASubgroupAndBack) {
  auto& comm = dmath_world();
  const int g = comm.size();
  Rng rng(103);
  const std::int64_t rows = 11, cols = 9;
  const auto global = random_matrix<double>(rng, rows, cols);
  std::vector<int> reversed;
  for (int r = g - 1; r >= (g > 1 ? 1 : 0); --r) reversed.push_back(r);  // all but rank 0, when there are others
  const Layout on_all = Layout::block_cyclic(rows, cols, ProcessGrid::near_square(g), 2, 3);
  const Layout on_sub = Layout::block_cyclic(rows, cols, ProcessGrid(1, static_cast<int>(reversed.size()),
                                                                     GridOrder::row_major, reversed), 4, 2);
  const Layout on_one = Layout::replicated(rows, cols, {g - 1});
  const auto a = DistMatrix<double>::from_global(comm, on_all, global.data());
  const auto b = a.redistribute(on_sub);
  if (g > 1 && comm.rank() == 0) EXPECT_EQ(b.local_rows() * b.local_cols(), 0);
  const auto c = b.redistribute(on_one);
  if (comm.rank() == g - 1) {
    ASSERT_EQ(c.local_rows() * c.local_cols(), rows * cols);
    EXPECT_EQ(std::vector<double>(c.local_data(), c.local_data() + rows * cols), global);
  }
  EXPECT_EQ(c.redistribute(Layout::row_block(rows, cols, g)).to_global(), global);
}

// The model-parallel split (row_shards, col_shards in blocks of a unit) to
// and from every other kind, and between two units: exact.
TEST(DmathRedistribute, ShardsLayoutsToAndFromEveryKind) {
  auto& comm = dmath_world();
  const int g = comm.size();
  Rng rng(104);
  for (LayoutKind other_kind : kKinds) {
    for (int trial = 0; trial < 8; ++trial) {
      const std::int64_t unit = rng.uniform_int(1, 3), rows = rng.uniform_int(1, 5) * unit,
                         cols = rng.uniform_int(1, 5) * unit;
      const Layout shards =
          rng.coin() ? Layout::col_shards(rows, cols, g, unit) : Layout::row_shards(rows, cols, g, unit);
      const Layout other = random_layout(rng, other_kind, rows, cols, g);
      const auto global = random_matrix<float>(rng, rows, cols);
      SCOPED_TRACE(shards.str() + " <-> " + other.str() + " on " + std::to_string(g) + " ranks");
      const auto a = DistMatrix<float>::from_global(comm, shards, global.data());
      const auto b = a.redistribute(other);
      EXPECT_EQ(b.to_global(), global);
      const auto back = b.redistribute(shards);
      const auto expected = DistMatrix<float>::from_global(comm, shards, global.data());
      ASSERT_EQ(back.local_rows() * back.local_cols(), expected.local_rows() * expected.local_cols());
      for (std::int64_t i = 0; i < back.local_rows() * back.local_cols(); ++i)
        ASSERT_EQ(back.local_data()[i], expected.local_data()[i]) << "local element " << i;
      EXPECT_EQ(a.redistribute(Layout::col_shards(rows, cols, g, 1)).to_global(), global);
    }
  }
}

TEST(DmathRedistribute, ShapesAndGroupsMustMatch) {
  auto& comm = dmath_world();
  const DistMatrix<double> a(comm, Layout::replicated(4, 3));
  DistMatrix<double> wrong_shape(comm, Layout::replicated(3, 4));
  EXPECT_THROW(magmadnn::distributed::dmath::redistribute(a, wrong_shape), magmadnn::ShapeError);
  magmadnn::distributed::LocalCommunicator other;
  DistMatrix<double> elsewhere(other, Layout::replicated(4, 3));
  EXPECT_THROW(magmadnn::distributed::dmath::redistribute(a, elsewhere), magmadnn::ValueError);
}
