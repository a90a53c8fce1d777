// Replicas that copy only when their source changed, synchronously and
// asynchronously, and plans kept across calls (dMath's replication cache and
// cached metadata), in every layout kind at 1-4 ranks.
#include <gtest/gtest.h>

#include "dmath_test_util.h"
#include "magmadnn/dmath/elementwise.h"
#include "magmadnn/dmath/gemm.h"
#include "magmadnn/dmath/plan_cache.h"
#include "magmadnn/dmath/redistribute.h"
#include "magmadnn/dmath/replica.h"

using namespace dtest;
using magmadnn::distributed::dmath::DistMatrix;
using magmadnn::distributed::dmath::Replica;
namespace dm = magmadnn::distributed::dmath;

TEST(DmathStamp, CopiesShareItAndChangesRenewIt) {
  auto& comm = dmath_world();
  DistMatrix<float> a(comm, Layout::row_block(5, 3, comm.size())), b(comm, Layout::row_block(5, 3, comm.size()));
  EXPECT_NE(a.stamp(), b.stamp());
  const DistMatrix<float> copy = a;
  EXPECT_EQ(copy.stamp(), a.stamp());
  const auto before = a.stamp();
  a.mark_changed();
  EXPECT_NE(a.stamp(), before);
  const auto after_mark = a.stamp();
  dm::axpby(1.0f, b, 0.0f, a);  // operations that write mark their result
  EXPECT_NE(a.stamp(), after_mark);
  const auto after_axpby = a.stamp();
  dm::transform(a, [](float v) { return v; });
  EXPECT_NE(a.stamp(), after_axpby);
}

TEST(DmathReplica, CopiesOnlyWhenTheSourceChangedInEveryLayout) {
  auto& comm = dmath_world();
  Rng rng(401);
  for (LayoutKind kind : kKinds)
    for (int trial = 0; trial < 5; ++trial) {
      const std::int64_t rows = rng.uniform_int(1, 12), cols = rng.uniform_int(1, 12);
      const Layout l = random_layout(rng, kind, rows, cols, comm.size());
      SCOPED_TRACE(l.str() + " on " + std::to_string(comm.size()) + " ranks");
      const auto g = random_matrix<double>(rng, rows, cols);
      auto w = DistMatrix<double>::from_global(comm, l, g.data());
      Replica<double> r(w);
      EXPECT_FALSE(r.current());
      EXPECT_EQ(r.get(), g);
      EXPECT_TRUE(r.current());
      EXPECT_EQ(r.get(), g);  // kept: no copy
      EXPECT_EQ(r.stats().copies, 1u);
      EXPECT_EQ(r.stats().reuses, 1u);

      // A change (here w = 2 w) is seen by the next get().
      dm::transform(w, [](double v) { return 2 * v; });
      EXPECT_FALSE(r.current());
      std::vector<double> doubled(g.size());
      for (std::size_t k = 0; k < g.size(); ++k) doubled[k] = 2 * g[k];
      EXPECT_EQ(r.get(), doubled);
      EXPECT_EQ(r.stats().copies, 2u);

      // Asynchronous: the copy snapshots w when it starts; a write while it
      // is in flight is not in it, and the next get() copies again.
      dm::transform(w, [](double v) { return v + 1; });
      r.start();
      r.start();  // already in flight for this stamp: nothing more is posted
      dm::transform(w, [](double v) { return -v; });
      r.wait();
      EXPECT_FALSE(r.current());
      std::vector<double> now(g.size());
      for (std::size_t k = 0; k < g.size(); ++k) now[k] = -(2 * g[k] + 1);
      EXPECT_EQ(r.get(), now);
      EXPECT_EQ(r.stats().copies, 4u);

      // Started and finished with no change in between: get() sends nothing more.
      dm::transform(w, [](double v) { return v * 0.5; });
      r.start();
      for (std::size_t k = 0; k < g.size(); ++k) now[k] *= 0.5;
      EXPECT_EQ(r.get(), now);
      EXPECT_EQ(r.stats().copies, 5u);
      EXPECT_TRUE(r.current());
    }
}

TEST(DmathReplica, AnAsynchronousCopyHoldsTheSnapshotItStartedFrom) {
  auto& comm = dmath_world();
  const std::int64_t rows = 9, cols = 7;
  Rng rng(402);
  const auto g = random_matrix<float>(rng, rows, cols);
  auto w = DistMatrix<float>::from_global(comm, Layout::block_cyclic(rows, cols, ProcessGrid::near_square(comm.size()), 2, 3),
                                          g.data());
  Replica<float> r(w);
  r.start();
  dm::transform(w, [](float) { return 0.0f; });
  r.wait();
  // What wait() finished is the snapshot; get() would now copy the zeros.
  EXPECT_FALSE(r.current());
  EXPECT_EQ(r.stats().copies, 1u);
  EXPECT_EQ(r.get(), std::vector<float>(g.size(), 0.0f));
  EXPECT_EQ(r.stats().copies, 2u);
}

TEST(DmathPlanCache, RepeatedCallsReuseTheirPlans) {
  auto& comm = dmath_world();
  const int g = comm.size();
  dm::reset_plan_cache();
  const Layout from = Layout::block_cyclic(12, 10, ProcessGrid::near_square(g), 2, 3);
  const Layout to = Layout::col_block(12, 10, g);
  Rng rng(403);
  const auto x = random_matrix<float>(rng, 12, 10);
  const auto a = DistMatrix<float>::from_global(comm, from, x.data());
  std::vector<DistMatrix<float>> moved;
  for (int step = 0; step < 3; ++step) moved.push_back(a.redistribute(to));
  // On one rank the layouts are equal: a local copy, no plan.
  const std::uint64_t planned = from == to ? 0u : 1u;
  const dm::PlanStats after_redistribute = dm::plan_stats();
  EXPECT_EQ(after_redistribute.made, planned);
  EXPECT_EQ(after_redistribute.reused, 2 * planned);
  for (const auto& m : moved) EXPECT_EQ(m.to_global(), x);
  dm::reset_plan_cache();  // to_global plans on one rank

  DistMatrix<float> c(comm, Layout::row_block(12, 12, g));
  for (int step = 0; step < 4; ++step) dm::gemm(1.0f, a, false, a, true, 0.0f, c);
  const dm::PlanStats after_gemm = dm::plan_stats();
  // One GEMM plan, plus the plans of whatever remapping it runs, all reused from the second step on.
  EXPECT_GE(after_gemm.made, 1u);
  EXPECT_EQ(after_gemm.reused, 3 * after_gemm.made);

  // Other layouts need a plan of their own; a reset forgets them all.
  const Layout other = Layout::block_cyclic(12, 10, ProcessGrid(1, g), 1, 1);
  (void)a.redistribute(other);
  EXPECT_EQ(dm::plan_stats().made, after_gemm.made + (from == other ? 0u : 1u));
  dm::reset_plan_cache();
  EXPECT_EQ(dm::plan_stats().made, 0u);
  EXPECT_EQ(dm::plan_stats().reused, 0u);
  (void)a.redistribute(to);
  EXPECT_EQ(dm::plan_stats().made, planned);
}
