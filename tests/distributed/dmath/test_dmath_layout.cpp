// Layouts and GEMM plans: pure functions of the layouts, checked without
// communication (each rank of an MPI run checks the same).
#include <gtest/gtest.h>

#include <vector>

#include "dmath_test_util.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/core/shard.h"
#include "magmadnn/dmath/dist_matrix.h"
#include "magmadnn/dmath/gemm.h"
#include "magmadnn/comm/local_communicator.h"

using namespace dtest;
using magmadnn::distributed::dmath::GemmAlgorithm;
using magmadnn::distributed::dmath::plan_gemm;

namespace {

// Every element has one owner (or every rank when replicated) and one local
// place, the maps invert each other, and the local extents count exactly
// the elements each rank holds.
void check_maps(const Layout& l, int group) {
  SCOPED_TRACE(l.str());
  std::vector<std::int64_t> held(static_cast<std::size_t>(group), 0);
  for (std::int64_t i = 0; i < l.rows(); ++i) {
    for (std::int64_t j = 0; j < l.cols(); ++j) {
      const int o = l.owner(i, j);
      const auto [li, lj] = l.local_index(i, j);
      if (l.is_replicated()) {
        ASSERT_EQ(o, -1);
        for (int r = 0; r < group; ++r) held[r] += l.holds(r) ? 1 : 0;
        continue;
      }
      ASSERT_GE(o, 0);
      ASSERT_LT(o, group);
      ASSERT_TRUE(l.holds(o));
      ASSERT_LT(li, l.local_rows(o));
      ASSERT_LT(lj, l.local_cols(o));
      ASSERT_EQ(l.global_index(o, li, lj), std::make_pair(i, j));
      ++held[o];
    }
  }
  std::int64_t total = 0, holders = 0;
  for (int r = 0; r < group; ++r) {
    holders += l.holds(r) ? 1 : 0;
    EXPECT_EQ(held[r], l.local_size(r)) << "rank " << r;
    EXPECT_LE(l.local_size(r), l.max_local_size());
    total += held[r];
    for (std::int64_t li = 0; li < l.local_rows(r); ++li)
      for (std::int64_t lj = 0; lj < l.local_cols(r); ++lj) {
        const auto [i, j] = l.global_index(r, li, lj);
        if (!l.is_replicated()) ASSERT_EQ(l.owner(i, j), r);
        ASSERT_EQ(l.local_index(i, j), std::make_pair(li, lj));
      }
  }
  EXPECT_EQ(total, l.is_replicated() ? l.size() * holders : l.size());
}

}  // namespace

TEST(DmathLayout, IndexMapsInvertAndPartitionForRandomLayouts) {
  Rng rng(11);
  for (int trial = 0; trial < 400; ++trial) {
    const int group = rng.uniform_int(1, 6);
    const LayoutKind kind = kKinds[rng.uniform_int(0, 3)];
    const Layout l = random_layout(rng, kind, rng.uniform_int(0, 13), rng.uniform_int(0, 13), group);
    check_maps(l, group);
    check_maps(l.transposed(), group);
    if (HasFatalFailure()) return;
  }
}

TEST(DmathLayout, TransposeKeepsEveryElementOnItsRank) {
  Rng rng(12);
  for (int trial = 0; trial < 200; ++trial) {
    const Layout l = random_layout(rng, kKinds[rng.uniform_int(1, 3)], rng.uniform_int(1, 11),
                                   rng.uniform_int(1, 11), rng.uniform_int(1, 6));
    const Layout t = l.transposed();
    SCOPED_TRACE(l.str() + " -> " + t.str());
    EXPECT_EQ(t.transposed(), l);
    for (std::int64_t i = 0; i < l.rows(); ++i)
      for (std::int64_t j = 0; j < l.cols(); ++j) {
        ASSERT_EQ(t.owner(j, i), l.owner(i, j));
        const auto [li, lj] = l.local_index(i, j);
        ASSERT_EQ(t.local_index(j, i), std::make_pair(lj, li));
      }
  }
}

TEST(DmathLayout, BlockLayoutsSplitUnevenSizes) {
  const Layout r = Layout::row_block(10, 3, 4);  // blocks of 3 rows: 3, 3, 3, 1
  EXPECT_EQ(r.local_rows(0), 3);
  EXPECT_EQ(r.local_rows(3), 1);
  EXPECT_EQ(r.local_cols(3), 3);
  const Layout few = Layout::row_block(5, 2, 4);  // blocks of 2: 2, 2, 1, 0
  EXPECT_EQ(few.local_rows(2), 1);
  EXPECT_EQ(few.local_rows(3), 0);
  EXPECT_EQ(few.local_size(3), 0);
  const Layout c = Layout::col_block(2, 7, 3);  // 3, 3, 1
  EXPECT_EQ(c.local_cols(2), 1);
  EXPECT_EQ(c.owner(1, 6), 2);
  // A rank beyond the grid holds nothing.
  EXPECT_EQ(c.local_size(3), 0);
  EXPECT_EQ(Layout::replicated(4, 5).local_size(7), 20);
}

// The model-parallel split (core/shard.h) as a layout: rank r holds the
// blocks of `unit` columns (rows) shard_of gives it, in one run; the maps
// invert and partition as for every other kind, transposed too.
TEST(DmathLayout, ShardsLayoutsDealBlocksByShardOf) {
  for (int p = 1; p <= 5; ++p)
    for (std::int64_t unit = 1; unit <= 3; ++unit)
      for (std::int64_t n = 0; n <= 11; ++n) {
        const Layout c = Layout::col_shards(2, n * unit, p, unit);
        SCOPED_TRACE(c.str());
        check_maps(c, p);
        check_maps(c.transposed(), p);
        EXPECT_EQ(c.transposed(), Layout::row_shards(n * unit, 2, p, unit));
        for (int r = 0; r < p; ++r) {
          const magmadnn::Shard s = magmadnn::shard_of(n, p, r);
          ASSERT_EQ(c.local_cols(r), s.extent * unit) << "rank " << r;
          if (s.extent > 0) ASSERT_EQ(c.global_index(r, 1, 0), std::make_pair<std::int64_t>(1, s.offset * unit));
        }
        if (HasFatalFailure()) return;
      }
  // A last block shorter than the unit stays with the rank whose shard ends there.
  const Layout short_end = Layout::col_shards(1, 7, 2, 3);  // blocks 3, 3, 1: ranks hold 6 and 1
  EXPECT_EQ(short_end.local_cols(0), 6);
  EXPECT_EQ(short_end.local_cols(1), 1);
  check_maps(short_end, 2);
  // Not the col_block split (blocks of ceil(n / P)), which leaves a rank empty here.
  EXPECT_NE(Layout::col_shards(1, 5, 4), Layout::col_block(1, 5, 4));
  EXPECT_EQ(Layout::col_shards(1, 5, 4).local_cols(3), 1);
  EXPECT_EQ(Layout::col_block(1, 5, 4).local_cols(3), 0);
}

TEST(DmathLayout, EqualDistributionsCompareEqualWhateverTheirKind) {
  EXPECT_EQ(Layout::row_block(7, 5, 3), Layout::block_cyclic(7, 5, ProcessGrid(3, 1), 3, 2));
  EXPECT_EQ(Layout::col_block(7, 5, 2), Layout::block_cyclic(7, 5, ProcessGrid(1, 2, GridOrder::col_major), 4, 3));
  EXPECT_FALSE(Layout::row_block(7, 5, 3) == Layout::row_block(7, 5, 2));
  EXPECT_FALSE(Layout::block_cyclic(6, 6, ProcessGrid(2, 2), 1, 1) ==
               Layout::block_cyclic(6, 6, ProcessGrid(2, 2, GridOrder::col_major), 1, 1));
  EXPECT_FALSE(Layout::replicated(3, 3) == Layout::block_cyclic(3, 3, ProcessGrid(1, 1), 3, 3));
}

TEST(DmathLayout, RankListsPlaceAGridOnASubgroup) {
  const ProcessGrid g(2, 2, GridOrder::col_major, {5, 2, 7, 0});
  EXPECT_EQ(g.rank_of(1, 0), 2);
  EXPECT_EQ(g.rank_of(0, 1), 7);
  EXPECT_EQ(g.row_of(7), 0);
  EXPECT_EQ(g.col_of(7), 1);
  EXPECT_EQ(g.row_of(1), -1);
  EXPECT_EQ(g.max_rank(), 7);
  EXPECT_EQ(g.transposed().rank_of(1, 0), 7);
  // The list 0, 1, ... is no list at all.
  EXPECT_EQ(ProcessGrid(1, 3, GridOrder::row_major, {0, 1, 2}), ProcessGrid(1, 3));
  const Layout rep = Layout::replicated(3, 3, {4, 1});
  EXPECT_TRUE(rep.holds(1));
  EXPECT_FALSE(rep.holds(0));
  EXPECT_EQ(rep.local_size(0), 0);
  EXPECT_EQ(rep.local_size(4), 9);
  EXPECT_EQ(rep.max_rank(), 4);
  EXPECT_FALSE(rep == Layout::replicated(3, 3));
  const Layout rows = Layout::row_block(6, 2, std::vector<int>{3, 1});
  EXPECT_EQ(rows.owner(0, 0), 3);
  EXPECT_EQ(rows.owner(5, 1), 1);
  EXPECT_EQ(rows.local_rows(0), 0);
}

TEST(DmathLayout, GridsNumberRanksInTheirOrder) {
  const ProcessGrid row(2, 3), col(2, 3, GridOrder::col_major);
  EXPECT_EQ(row.rank_of(1, 0), 3);
  EXPECT_EQ(col.rank_of(1, 0), 1);
  EXPECT_EQ(col.row_of(5), 1);
  EXPECT_EQ(col.col_of(5), 2);
  EXPECT_EQ(row.row_of(6), -1);
  EXPECT_EQ(row.transposed(), ProcessGrid(3, 2, GridOrder::col_major));
  EXPECT_EQ(ProcessGrid::near_square(4), ProcessGrid(2, 2));
  EXPECT_EQ(ProcessGrid::near_square(6), ProcessGrid(2, 3));
  EXPECT_EQ(ProcessGrid::near_square(3), ProcessGrid(1, 3));
}

TEST(DmathLayout, BadArgumentsAreRefusedWithTheirValues) {
  using magmadnn::ValueError;
  EXPECT_THROW(ProcessGrid(0, 2), ValueError);
  EXPECT_THROW(Layout::block_cyclic(4, 4, ProcessGrid(2, 2), 0, 1), ValueError);
  EXPECT_THROW(Layout::row_block(-1, 4, 2), ValueError);
  EXPECT_THROW(Layout::col_block(4, 4, 0), ValueError);
  EXPECT_THROW(ProcessGrid(2, 2, GridOrder::row_major, {0, 1, 2}), ValueError);
  EXPECT_THROW(ProcessGrid(1, 2, GridOrder::row_major, {3, 3}), ValueError);
  EXPECT_THROW(Layout::replicated(2, 2, {1, -1}), ValueError);
  magmadnn::distributed::LocalCommunicator one;
  try {
    magmadnn::distributed::dmath::DistMatrix<float> m(one, Layout::row_block(4, 4, 2));
    FAIL() << "a 2-rank layout on a 1-rank group was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("needs rank 1 but the group has 1 ranks"), std::string::npos) << e.what();
  }
}

// -- which algorithm each pair of layouts gets (4 ranks, square shapes) -------

TEST(DmathPlan, RowBlockTimesReplicatedIsLocal) {
  const auto p = plan_gemm(Layout::row_block(8, 8, 4), false, Layout::replicated(8, 8), false,
                           Layout::row_block(8, 8, 4), 4);
  EXPECT_EQ(p.algorithm, GemmAlgorithm::local);
  EXPECT_FALSE(p.remap_a || p.remap_b);
  EXPECT_EQ(p.received, 0);
}

TEST(DmathPlan, ReplicatedOperandsServeABlockCyclicC) {
  const auto p = plan_gemm(Layout::replicated(9, 7), true, Layout::replicated(9, 5), false,
                           Layout::block_cyclic(7, 5, ProcessGrid(2, 2), 2, 3), 4);
  EXPECT_EQ(p.algorithm, GemmAlgorithm::local);
  EXPECT_FALSE(p.remap_a || p.remap_b);
}

TEST(DmathPlan, ColumnBlockTimesRowBlockIsAReduction) {
  for (const Layout& c : {Layout::replicated(8, 8), Layout::row_block(8, 8, 4),
                          Layout::block_cyclic(8, 8, ProcessGrid(2, 2), 3, 1)}) {
    const auto p = plan_gemm(Layout::col_block(8, 8, 4), false, Layout::row_block(8, 8, 4), false, c, 4);
    EXPECT_EQ(p.algorithm, GemmAlgorithm::reduce) << c.str();
    EXPECT_FALSE(p.remap_a || p.remap_b) << c.str();
  }
  // Through transposes: A stored by rows is op(A) = A^T by columns.
  const auto t = plan_gemm(Layout::row_block(8, 8, 4), true, Layout::col_block(8, 8, 4), true,
                           Layout::row_block(8, 8, 4), 4);
  EXPECT_EQ(t.algorithm, GemmAlgorithm::reduce);
  EXPECT_FALSE(t.remap_a || t.remap_b);
}

TEST(DmathPlan, MatchingBlockCyclicGridsRunSumma) {
  const ProcessGrid g(2, 2);
  const auto p = plan_gemm(Layout::block_cyclic(64, 48, g, 4, 8), false, Layout::block_cyclic(48, 32, g, 2, 5),
                           false, Layout::block_cyclic(64, 32, g, 4, 5), 4);
  EXPECT_EQ(p.algorithm, GemmAlgorithm::summa);
  EXPECT_FALSE(p.remap_a || p.remap_b);
  // The transposed A of the transposed grid is the same distribution.
  const Layout at = Layout::block_cyclic(64, 48, g, 4, 8).transposed();
  const auto q = plan_gemm(at, true, Layout::block_cyclic(48, 32, g, 2, 5), false,
                           Layout::block_cyclic(64, 32, g, 4, 5), 4);
  EXPECT_EQ(q.algorithm, GemmAlgorithm::summa);
  EXPECT_FALSE(q.remap_a || q.remap_b);
}

TEST(DmathPlan, MismatchedOperandsAreRemappedToTheCheapestFit) {
  const ProcessGrid g(2, 2);
  // B on another grid than C: remapped, A kept.
  const auto p = plan_gemm(Layout::block_cyclic(64, 64, g, 4, 4), false,
                           Layout::block_cyclic(64, 64, ProcessGrid(4, 1), 4, 4), false,
                           Layout::block_cyclic(64, 64, g, 4, 4), 4);
  EXPECT_EQ(p.algorithm, GemmAlgorithm::summa);
  EXPECT_FALSE(p.remap_a);
  EXPECT_TRUE(p.remap_b);
  EXPECT_EQ(p.op_b, Layout::block_cyclic(64, 64, g, 4, 4));
  EXPECT_GT(p.received, 0);
}

TEST(DmathPlan, ShapesThatDoNotChainAreRefused) {
  EXPECT_THROW(plan_gemm(Layout::replicated(3, 4), false, Layout::replicated(5, 2), false, Layout::replicated(3, 2), 1),
               magmadnn::ShapeError);
}
