// Distributed GEMM against the single-process product, for every pair of
// operand layout kinds, every layout kind of C, and all four transpose
// combinations, in float and double, with random shapes, grids and block
// sizes. Tolerance: both results sum the same k products in different
// orders, so each element differs by at most about 2 k eps times the sum of
// the magnitudes of its terms (double: about 1e-14 here; float: about 1e-5).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "dmath_test_util.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/dmath/gemm.h"
#include "magmadnn/dmath/local_gemm.h"

using namespace dtest;
using magmadnn::distributed::dmath::DistMatrix;
using magmadnn::distributed::dmath::GemmAlgorithm;
using magmadnn::distributed::dmath::gemm;

namespace {

// Runs gemm on the layouts given and compares every element of C with the
// single-process product; returns the plan that ran.
template <typename T>
magmadnn::distributed::dmath::GemmPlan check_gemm(magmadnn::distributed::Communicator& comm, T alpha,
                                                  const Layout& la, const std::vector<T>& a, bool ta,
                                                  const Layout& lb, const std::vector<T>& b, bool tb, T beta,
                                                  const Layout& lc, const std::vector<T>& c0,
                                                  std::optional<GemmAlgorithm> force = std::nullopt) {
  const std::int64_t m = lc.rows(), n = lc.cols(), k = ta ? la.rows() : la.cols();
  auto reference = c0;
  magmadnn::distributed::dmath::detail::local_gemm(ta, tb, m, n, k, alpha, a.data(), la.cols(), b.data(),
                                                   lb.cols(), beta, reference.data(), n);
  const auto da = DistMatrix<T>::from_global(comm, la, a.data());
  const auto db = DistMatrix<T>::from_global(comm, lb, b.data());
  auto dc = DistMatrix<T>::from_global(comm, lc, c0.data());
  const auto plan = gemm(alpha, da, ta, db, tb, beta, dc, force);
  if (force) EXPECT_EQ(plan.algorithm, *force);
  const auto result = dc.to_global();
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double magnitude = 0;
      for (std::int64_t p = 0; p < k; ++p)
        magnitude += std::abs(static_cast<double>(ta ? a[p * m + i] : a[i * k + p]) *
                              static_cast<double>(tb ? b[j * k + p] : b[p * n + j]));
      magnitude = std::abs(static_cast<double>(alpha)) * magnitude +
                  (beta == T(0) ? 0.0 : std::abs(static_cast<double>(beta) * c0[i * n + j]));
      const double tol = 2.0 * (k + 2) * std::numeric_limits<T>::epsilon() * magnitude;
      EXPECT_NEAR(result[i * n + j], reference[i * n + j], tol)
          << "at (" << i << ", " << j << "), algorithm " << gemm_algorithm_name(plan.algorithm);
      if (::testing::Test::HasFailure()) return plan;
    }
  return plan;
}

template <typename T>
void every_combination(std::uint64_t seed, std::map<GemmAlgorithm, int>& ran) {
  using ::testing::Test;
  auto& comm = dmath_world();
  const int group = comm.size();
  Rng rng(seed);
  for (LayoutKind ka : kKinds)
    for (LayoutKind kb : kKinds)
      for (LayoutKind kc : kKinds)
        for (int t = 0; t < 4; ++t) {
          const bool ta = t & 1, tb = t & 2;
          const std::int64_t m = rng.uniform_int(1, 13), n = rng.uniform_int(1, 13), k = rng.uniform_int(1, 29);
          const Layout la = random_layout(rng, ka, ta ? k : m, ta ? m : k, group);
          const Layout lb = random_layout(rng, kb, tb ? n : k, tb ? k : n, group);
          const Layout lc = random_layout(rng, kc, m, n, group);
          const T alpha = static_cast<T>(rng.uniform(-2, 2));
          const T beta = rng.uniform_int(0, 2) == 0 ? T(0) : static_cast<T>(rng.uniform(-2, 2));
          const auto a = random_matrix<T>(rng, la.rows(), la.cols());
          const auto b = random_matrix<T>(rng, lb.rows(), lb.cols());
          auto c0 = random_matrix<T>(rng, m, n);
          // beta == 0 must not read C: NaN there must not survive.
          if (beta == T(0)) c0.assign(c0.size(), std::numeric_limits<T>::quiet_NaN());
          SCOPED_TRACE("A " + la.str() + (ta ? " (T)" : "") + ", B " + lb.str() + (tb ? " (T)" : "") + ", C " +
                       lc.str() + " on " + std::to_string(group) + " ranks");

          // The plan chosen, then each algorithm forced (remapping as it must).
          const auto plan = check_gemm(comm, alpha, la, a, ta, lb, b, tb, beta, lc, c0);
          ++ran[plan.algorithm];
          for (GemmAlgorithm alg : {GemmAlgorithm::local, GemmAlgorithm::reduce, GemmAlgorithm::summa}) {
            SCOPED_TRACE(std::string("forced ") + gemm_algorithm_name(alg));
            if (alg == GemmAlgorithm::summa && lc.is_replicated()) {
              DistMatrix<T> dc(comm, lc);
              EXPECT_THROW(gemm(alpha, DistMatrix<T>(comm, la), ta, DistMatrix<T>(comm, lb), tb, beta, dc, alg),
                           magmadnn::NotSupportedError);
              continue;
            }
            check_gemm(comm, alpha, la, a, ta, lb, b, tb, beta, lc, c0, alg);
          }
          if (Test::HasFailure()) return;
        }
}

}  // namespace

TEST(DmathGemm, EveryLayoutCombinationFloat) {
  std::map<GemmAlgorithm, int> ran;
  every_combination<float>(201, ran);
  if (dmath_world().rank() == 0)
    std::printf("algorithms run: local %d, reduce %d, summa %d\n", ran[GemmAlgorithm::local],
                ran[GemmAlgorithm::reduce], ran[GemmAlgorithm::summa]);
  if (dmath_world().size() > 1) {
    // The random layouts reach every algorithm.
    EXPECT_GT(ran[GemmAlgorithm::local], 0);
    EXPECT_GT(ran[GemmAlgorithm::reduce], 0);
    EXPECT_GT(ran[GemmAlgorithm::summa], 0);
  }
}

TEST(DmathGemm, EveryLayoutCombinationDouble) {
  std::map<GemmAlgorithm, int> ran;
  every_combination<double>(202, ran);
}

namespace {

// Operands laid out for `alg` as they are: random grids (any subgroup and
// order), blocks and transposes; the algorithm must run without a remap.
template <typename T>
void fitting(GemmAlgorithm alg, std::uint64_t seed) {
  auto& comm = dmath_world();
  const int g = comm.size();
  Rng rng(seed);
  for (int trial = 0; trial < 48; ++trial) {
    const bool ta = trial & 1, tb = trial & 2;
    const std::int64_t m = rng.uniform_int(1, 40), n = rng.uniform_int(1, 40), k = rng.uniform_int(1, 40);
    const std::vector<int> ranks = some_ranks(rng, g);
    const int size = static_cast<int>(ranks.size());
    const std::int64_t kb = rng.uniform_int(1, 8);
    Layout va = Layout::replicated(m, k), vb = Layout::replicated(k, n), lc = Layout::replicated(m, n);
    switch (alg) {
      case GemmAlgorithm::local:
        if (rng.coin()) {  // rows of C and op(A), op(B) replicated
          const std::int64_t mb = rng.uniform_int(1, 8);
          lc = Layout::block_cyclic(m, n, ProcessGrid(size, 1, GridOrder::row_major, ranks), mb, 1);
          va = Layout::block_cyclic(m, k, lc.grid(), mb, 1);
        } else {  // the mirror image over columns
          const std::int64_t nb = rng.uniform_int(1, 8);
          lc = Layout::block_cyclic(m, n, ProcessGrid(1, size, GridOrder::row_major, ranks), 1, nb);
          vb = Layout::block_cyclic(k, n, lc.grid(), 1, nb);
        }
        break;
      case GemmAlgorithm::reduce:
        va = Layout::block_cyclic(m, k, ProcessGrid(1, size, GridOrder::row_major, ranks), 1, kb);
        vb = va.transposed();
        vb = Layout::block_cyclic(k, n, vb.grid(), kb, 1);
        lc = random_layout(rng, kKinds[rng.uniform_int(0, 3)], m, n, g);
        break;
      case GemmAlgorithm::summa: {
        std::vector<int> divisors;
        for (int d = 1; d <= size; ++d)
          if (size % d == 0) divisors.push_back(d);
        const int pr = divisors[static_cast<std::size_t>(rng.uniform_int(0, static_cast<int>(divisors.size()) - 1))];
        const ProcessGrid grid(pr, size / pr, rng.coin() ? GridOrder::row_major : GridOrder::col_major, ranks);
        const std::int64_t mb = rng.uniform_int(1, 8), nb = rng.uniform_int(1, 8);
        lc = Layout::block_cyclic(m, n, grid, mb, nb);
        va = Layout::block_cyclic(m, k, grid, mb, kb);
        vb = Layout::block_cyclic(k, n, grid, rng.uniform_int(1, 8), nb);
        break;
      }
    }
    const Layout la = ta ? va.transposed() : va, lb = tb ? vb.transposed() : vb;
    SCOPED_TRACE("A " + la.str() + (ta ? " (T)" : "") + ", B " + lb.str() + (tb ? " (T)" : "") + ", C " +
                 lc.str() + " on " + std::to_string(g) + " ranks");
    const auto a = random_matrix<T>(rng, la.rows(), la.cols());
    const auto b = random_matrix<T>(rng, lb.rows(), lb.cols());
    const auto c0 = random_matrix<T>(rng, m, n);
    const auto plan = check_gemm(comm, T(1), la, a, ta, lb, b, tb, T(0.5), lc, c0, alg);
    EXPECT_FALSE(plan.remap_a || plan.remap_b);
    if (::testing::Test::HasFailure()) return;
  }
}

}  // namespace

// The model-parallel shards layouts are for redistribution only: gemm
// names them instead of planning on maps it does not deal in.
TEST(DmathGemm, ShardsLayoutsAreRefusedWithTheirNames) {
  auto& comm = dmath_world();
  const int g = comm.size();
  if (g == 1) GTEST_SKIP() << "on one rank col_shards is col_block, which gemm takes";
  const DistMatrix<float> a(comm, Layout::col_shards(4, 6, g)), b(comm, Layout::replicated(6, 3));
  DistMatrix<float> c(comm, Layout::replicated(4, 3));
  try {
    gemm(1.0f, a, false, b, false, 0.0f, c);
    FAIL() << "gemm accepted a col_shards operand";
  } catch (const magmadnn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("redistribute to a block layout first"), std::string::npos) << e.what();
  }
}

TEST(DmathGemm, LocalOnFittingLayouts) {
  fitting<float>(GemmAlgorithm::local, 211);
  fitting<double>(GemmAlgorithm::local, 212);
}
TEST(DmathGemm, ReduceOnFittingLayouts) {
  fitting<float>(GemmAlgorithm::reduce, 213);
  fitting<double>(GemmAlgorithm::reduce, 214);
}
TEST(DmathGemm, SummaOnFittingLayouts) {
  fitting<float>(GemmAlgorithm::summa, 215);
  fitting<double>(GemmAlgorithm::summa, 216);
}

// Products large enough for oneDNN's float path (the small ones above go to
// OpenBLAS), every algorithm and transpose pair.
TEST(DmathGemm, LargerFloatProducts) {
  auto& comm = dmath_world();
  const int g = comm.size();
  Rng rng(217);
  const std::int64_t m = 130, n = 120, k = 140;
  const ProcessGrid grid = ProcessGrid::near_square(g);
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    const Layout va = Layout::block_cyclic(m, k, grid, 32, 48), vb = Layout::block_cyclic(k, n, grid, 40, 32);
    const Layout la = ta ? va.transposed() : va, lb = tb ? vb.transposed() : vb;
    const Layout lc = Layout::block_cyclic(m, n, grid, 32, 32);
    const auto a = random_matrix<float>(rng, la.rows(), la.cols());
    const auto b = random_matrix<float>(rng, lb.rows(), lb.cols());
    const auto c0 = random_matrix<float>(rng, m, n);
    for (GemmAlgorithm alg : {GemmAlgorithm::local, GemmAlgorithm::reduce, GemmAlgorithm::summa}) {
      SCOPED_TRACE(std::string(gemm_algorithm_name(alg)) + (ta ? ", A^T" : "") + (tb ? ", B^T" : ""));
      check_gemm(comm, 1.5f, la, a, ta, lb, b, tb, -0.5f, lc, c0, alg);
    }
  }
}

// Empty extents: k = 0 leaves C = beta C, and empty matrices move and
// multiply like any other, under every algorithm.
TEST(DmathGemm, EmptyExtents) {
  auto& comm = dmath_world();
  const int g = comm.size();
  const ProcessGrid grid = ProcessGrid::near_square(g);
  Rng rng(218);
  for (auto [m, n, k] : {std::array<std::int64_t, 3>{5, 4, 0}, {0, 4, 3}, {5, 0, 3}}) {
    const auto a = random_matrix<double>(rng, m, k);
    const auto b = random_matrix<double>(rng, k, n);
    const auto c0 = random_matrix<double>(rng, m, n);
    for (GemmAlgorithm alg : {GemmAlgorithm::local, GemmAlgorithm::reduce, GemmAlgorithm::summa}) {
      SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " +
                   gemm_algorithm_name(alg));
      check_gemm(comm, 1.0, Layout::row_block(m, k, g), a, false, Layout::col_block(k, n, g), b, false, 0.25,
                 Layout::block_cyclic(m, n, grid, 2, 2), c0, alg);
    }
  }
}

// The choice without forcing, on operands laid out for each algorithm.
TEST(DmathGemm, EachAlgorithmWithoutRemapDouble) {
  auto& comm = dmath_world();
  const int g = comm.size();
  Rng rng(203);
  const std::int64_t m = 37, n = 29, k = 41;
  const auto a = random_matrix<double>(rng, m, k);
  const auto b = random_matrix<double>(rng, k, n);
  std::vector<double> reference(static_cast<std::size_t>(m * n), 0.0);
  magmadnn::distributed::dmath::detail::local_gemm(false, false, m, n, k, 1.0, a.data(), k, b.data(), n, 0.0,
                                                   reference.data(), n);
  const ProcessGrid grid = ProcessGrid::near_square(g);
  struct Case {
    Layout a, b, c;
    GemmAlgorithm expect;
  };
  const Case cases[] = {
      {Layout::row_block(m, k, g), Layout::replicated(k, n), Layout::row_block(m, n, g), GemmAlgorithm::local},
      {Layout::replicated(m, k), Layout::col_block(k, n, g), Layout::col_block(m, n, g), GemmAlgorithm::local},
      {Layout::col_block(m, k, g), Layout::row_block(k, n, g), Layout::row_block(m, n, g),
       g > 1 ? GemmAlgorithm::reduce : GemmAlgorithm::local},
      {Layout::block_cyclic(m, k, grid, 4, 3), Layout::block_cyclic(k, n, grid, 5, 4),
       Layout::block_cyclic(m, n, grid, 4, 4), g > 1 ? GemmAlgorithm::summa : GemmAlgorithm::local},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.a.str() + " x " + c.b.str() + " -> " + c.c.str());
    const auto da = DistMatrix<double>::from_global(comm, c.a, a.data());
    const auto db = DistMatrix<double>::from_global(comm, c.b, b.data());
    DistMatrix<double> dc(comm, c.c);
    const auto plan = gemm(1.0, da, false, db, false, 0.0, dc);
    EXPECT_EQ(plan.algorithm, c.expect) << gemm_algorithm_name(plan.algorithm);
    EXPECT_FALSE(plan.remap_a || plan.remap_b);
    const auto result = dc.to_global();
    for (std::size_t i = 0; i < result.size(); ++i) ASSERT_NEAR(result[i], reference[i], 1e-12) << i;
  }
}
