// Elementwise operations, reductions and row softmax on distributed matrices
// against the single-process computation, for every layout kind of every
// operand and of the result (random shapes, subgroups, grids and blocks), in
// float and double. Elementwise results and max/min are exact. A sum adds
// the same n terms in another order: within n eps times the sum of their
// magnitudes. The softmax is checked against a double reference within
// 8 (cols + 2) eps of the input's type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "dmath_test_util.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/dmath/elementwise.h"
#include "magmadnn/dmath/reduce.h"
#include "magmadnn/dmath/softmax.h"
#include "magmadnn/comm/local_communicator.h"

using namespace dtest;
using magmadnn::distributed::ReduceOp;
using magmadnn::distributed::dmath::DistMatrix;
namespace dm = magmadnn::distributed::dmath;

namespace {

template <typename T>
DistMatrix<T> dist(const Layout& l, const std::vector<T>& global) {
  return DistMatrix<T>::from_global(dmath_world(), l, global.data());
}

// Every element this rank holds of `m` against the whole `expected`.
template <typename T>
void expect_holds(const DistMatrix<T>& m, const std::vector<T>& expected, double tol_per_element = 0) {
  const auto want = dist(m.layout(), expected);
  ASSERT_EQ(m.local_rows(), want.local_rows());
  ASSERT_EQ(m.local_cols(), want.local_cols());
  for (std::int64_t k = 0; k < m.local_rows() * m.local_cols(); ++k) {
    if (tol_per_element == 0) {
      ASSERT_EQ(m.local_data()[k], want.local_data()[k]) << "local element " << k;
    } else {
      ASSERT_NEAR(m.local_data()[k], want.local_data()[k], tol_per_element) << "local element " << k;
    }
  }
}

template <typename T>
void elementwise_every_layout(std::uint64_t seed) {
  const int g = dmath_world().size();
  Rng rng(seed);
  for (LayoutKind kx : kKinds)
    for (LayoutKind ky : kKinds)
      for (int trial = 0; trial < 4; ++trial) {
        const std::int64_t rows = rng.uniform_int(1, 13), cols = rng.uniform_int(1, 13);
        const Layout lx = random_layout(rng, kx, rows, cols, g), ly = random_layout(rng, ky, rows, cols, g);
        const Layout lb = random_layout(rng, kKinds[rng.uniform_int(0, 3)], 1, cols, g);
        const Layout lc = random_layout(rng, kKinds[rng.uniform_int(0, 3)], rows, 1, g);
        SCOPED_TRACE(lx.str() + " with " + ly.str() + " on " + std::to_string(g) + " ranks");
        const auto x = random_matrix<T>(rng, rows, cols), y = random_matrix<T>(rng, rows, cols);
        const auto b = random_matrix<T>(rng, 1, cols), c = random_matrix<T>(rng, rows, 1);
        const T alpha = T(1.5), beta = T(-0.25);

        auto Y = dist(ly, y);
        dm::axpby(alpha, dist(lx, x), beta, Y);
        std::vector<T> want(y.size());
        for (std::size_t k = 0; k < y.size(); ++k) want[k] = alpha * x[k] + beta * y[k];
        expect_holds(Y, want);

        std::vector<T> nan_filled(y.size(), std::numeric_limits<T>::quiet_NaN());
        auto Y0 = dist(ly, nan_filled);
        dm::axpby(alpha, dist(lx, x), T(0), Y0);  // beta 0 never reads Y
        for (std::size_t k = 0; k < y.size(); ++k) want[k] = alpha * x[k];
        expect_holds(Y0, want);

        auto C = dist(random_layout(rng, kKinds[rng.uniform_int(0, 3)], rows, cols, g), y);
        dm::hadamard(dist(lx, x), dist(ly, y), C);
        for (std::size_t k = 0; k < y.size(); ++k) want[k] = x[k] * y[k];
        expect_holds(C, want);

        auto R = dist(ly, y);
        dm::add_row_vector(dist(lb, b), R);
        dm::add_col_vector(dist(lc, c), R);
        for (std::int64_t i = 0; i < rows; ++i)
          for (std::int64_t j = 0; j < cols; ++j) {
            const auto k = static_cast<std::size_t>(i * cols + j);
            want[k] = (y[k] + b[static_cast<std::size_t>(j)]) + c[static_cast<std::size_t>(i)];
          }
        expect_holds(R, want);

        auto Z = dist(ly, y);
        dm::transform(Z, [](T v) { return v > 0 ? v : T(0); });
        for (std::size_t k = 0; k < y.size(); ++k) want[k] = y[k] > 0 ? y[k] : T(0);
        expect_holds(Z, want);
      }
}

template <typename T>
void reductions_every_layout(std::uint64_t seed) {
  const int g = dmath_world().size();
  const double eps = std::numeric_limits<T>::epsilon();
  Rng rng(seed);
  for (LayoutKind ka : kKinds)
    for (LayoutKind ko : kKinds)
      for (int trial = 0; trial < 4; ++trial) {
        const std::int64_t rows = rng.uniform_int(1, 13), cols = rng.uniform_int(1, 13);
        const Layout la = random_layout(rng, ka, rows, cols, g);
        const auto a = random_matrix<T>(rng, rows, cols);
        const auto A = dist(la, a);
        SCOPED_TRACE(la.str() + " on " + std::to_string(g) + " ranks");
        for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
          SCOPED_TRACE(magmadnn::distributed::reduce_op_name(op));
          std::vector<T> by_row(static_cast<std::size_t>(rows)), by_col(static_cast<std::size_t>(cols));
          const auto fold = [op](T acc, T v) {
            return op == ReduceOp::sum ? acc + v : op == ReduceOp::max ? std::max(acc, v) : std::min(acc, v);
          };
          T all = op == ReduceOp::sum ? T(0) : a[0];
          for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j) {
              const T v = a[static_cast<std::size_t>(i * cols + j)];
              T& r = by_row[static_cast<std::size_t>(i)];
              T& c = by_col[static_cast<std::size_t>(j)];
              r = j == 0 ? v : fold(r, v);
              c = i == 0 ? v : fold(c, v);
              if (op == ReduceOp::sum || i + j > 0) all = fold(all, v);
            }
          // Terms lie in [-1, 1]: each of two sums of n of them is off by at most n * n * eps.
          const auto tol = [&](std::int64_t n) {
            return op == ReduceOp::sum ? 2.0 * double(n) * double(n) * eps : 0.0;
          };
          DistMatrix<T> rs(dmath_world(), random_layout(rng, ko, rows, 1, g));
          dm::reduce_rows(A, op, rs);
          expect_holds(rs, by_row, tol(cols));
          DistMatrix<T> cs(dmath_world(), random_layout(rng, ko, 1, cols, g));
          dm::reduce_cols(A, op, cs);
          expect_holds(cs, by_col, tol(rows));
          const T total = dm::reduce_all(A, op);
          if (op == ReduceOp::sum) {
            EXPECT_NEAR(total, all, tol(rows * cols));
          } else {
            EXPECT_EQ(total, all);
          }
        }
      }
}

template <typename T>
void softmax_every_layout(std::uint64_t seed) {
  const int g = dmath_world().size();
  Rng rng(seed);
  for (LayoutKind kx : kKinds)
    for (LayoutKind ky : kKinds)
      for (int trial = 0; trial < 4; ++trial) {
        const std::int64_t rows = rng.uniform_int(1, 11), cols = rng.uniform_int(1, 17);
        const Layout lx = random_layout(rng, kx, rows, cols, g), ly = random_layout(rng, ky, rows, cols, g);
        SCOPED_TRACE(lx.str() + " into " + ly.str() + " on " + std::to_string(g) + " ranks");
        auto x = random_matrix<T>(rng, rows, cols);
        for (T& v : x) v *= T(30);  // wide logits: without the maximum subtracted, float exp would overflow at 88
        if (trial == 0) x[0] = T(200);
        std::vector<T> want(x.size());
        for (std::int64_t i = 0; i < rows; ++i) {
          double m = -1e300, s = 0;
          for (std::int64_t j = 0; j < cols; ++j) m = std::max(m, double(x[static_cast<std::size_t>(i * cols + j)]));
          for (std::int64_t j = 0; j < cols; ++j) s += std::exp(double(x[static_cast<std::size_t>(i * cols + j)]) - m);
          for (std::int64_t j = 0; j < cols; ++j) {
            const auto k = static_cast<std::size_t>(i * cols + j);
            want[k] = static_cast<T>(std::exp(double(x[k]) - m) / s);
          }
        }
        DistMatrix<T> Y(dmath_world(), ly);
        dm::softmax_rows(dist(lx, x), Y);
        expect_holds(Y, want, 8.0 * double(cols + 2) * std::numeric_limits<T>::epsilon());
        auto X = dist(lx, x);
        dm::softmax_rows(X, X);  // in place
        expect_holds(X, want, 8.0 * double(cols + 2) * std::numeric_limits<T>::epsilon());
      }
}

}  // namespace

TEST(DmathElementwise, EveryPairOfLayoutsFloat) { elementwise_every_layout<float>(301); }
TEST(DmathElementwise, EveryPairOfLayoutsDouble) { elementwise_every_layout<double>(302); }
TEST(DmathReduce, RowsColumnsAndAllInEveryLayoutFloat) { reductions_every_layout<float>(303); }
TEST(DmathReduce, RowsColumnsAndAllInEveryLayoutDouble) { reductions_every_layout<double>(304); }
TEST(DmathSoftmax, RowsSplitOrNotInEveryLayoutFloat) { softmax_every_layout<float>(305); }
TEST(DmathSoftmax, RowsSplitOrNotInEveryLayoutDouble) { softmax_every_layout<double>(306); }

// A bias gradient of outputs split by rows (a row_block matrix reduced into a
// column vector split the same way) takes the local path: the same values.
TEST(DmathReduce, AlignedOutputsAreFinishedLocally) {
  const int g = dmath_world().size();
  Rng rng(307);
  const std::int64_t rows = 10, cols = 7;
  const auto a = random_matrix<double>(rng, rows, cols);
  const auto A = dist(Layout::row_block(rows, cols, g), a);
  DistMatrix<double> out(dmath_world(), Layout::row_block(rows, 1, g));
  dm::reduce_rows(A, ReduceOp::sum, out);
  std::vector<double> want(static_cast<std::size_t>(rows), 0.0);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) want[static_cast<std::size_t>(i)] += a[static_cast<std::size_t>(i * cols + j)];
  expect_holds(out, want, 1e-15);
  const auto B = dist(Layout::col_block(rows, cols, g), a);
  DistMatrix<double> colmax(dmath_world(), Layout::col_block(1, cols, g));
  dm::reduce_cols(B, ReduceOp::max, colmax);
  std::vector<double> wantc(static_cast<std::size_t>(cols), -1e300);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      wantc[static_cast<std::size_t>(j)] = std::max(wantc[static_cast<std::size_t>(j)], a[static_cast<std::size_t>(i * cols + j)]);
  expect_holds(colmax, wantc);
}

TEST(DmathElementwise, WrongShapesGroupsAndOpsAreRefused) {
  auto& comm = dmath_world();
  const int g = comm.size();
  DistMatrix<float> a(comm, Layout::row_block(4, 3, g)), b(comm, Layout::row_block(3, 4, g));
  EXPECT_THROW(dm::axpby(1.0f, a, 0.0f, b), magmadnn::ShapeError);
  EXPECT_THROW(dm::hadamard(a, a, b), magmadnn::ShapeError);
  DistMatrix<float> row(comm, Layout::replicated(1, 4));
  EXPECT_THROW(dm::add_row_vector(row, a), magmadnn::ShapeError);
  DistMatrix<float> out(comm, Layout::replicated(3, 1));
  EXPECT_THROW(dm::reduce_rows(a, ReduceOp::sum, out), magmadnn::ShapeError);
  DistMatrix<float> out4(comm, Layout::replicated(4, 1));
  EXPECT_THROW(dm::reduce_rows(a, ReduceOp::avg, out4), magmadnn::ValueError);
  EXPECT_THROW(dm::softmax_rows(a, b), magmadnn::ShapeError);
  magmadnn::distributed::LocalCommunicator other;
  if (g == 1) {
    DistMatrix<float> elsewhere(other, Layout::row_block(4, 3, 1));
    EXPECT_THROW(dm::axpby(1.0f, elsewhere, 0.0f, a), magmadnn::ValueError);
  }
}
