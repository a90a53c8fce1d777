// CpuKernels<T> against naive double-precision references written here, on
// random data. float results are compared within a tolerance relative to the
// magnitude of what was summed; double results within ~1e-12.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "magmadnn/backend/cpu/blas.h"
#include "magmadnn/backend/cpu/cpu_gemm.h"
#include "magmadnn/backend/registry.h"
#include "magmadnn/backend/unary_op_table.h"
#include "magmadnn/core/determinism.h"
#include "magmadnn/core/errors.h"
#include "support/op_table.h"

using namespace magmadnn;

namespace {

template <typename T>
constexpr double kRel = std::is_same_v<T, float> ? 2e-5 : 1e-12;

std::mt19937_64& rng() {
  static std::mt19937_64 g(20240611);
  return g;
}

template <typename T>
std::vector<T> random_vec(std::size_t n, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(u(rng()));
  return v;
}

// |got - ref| <= rel * max(mag, 1): the scale is the magnitude of the terms
// that produced ref, so cancellation does not make the check impossible.
template <typename T>
::testing::AssertionResult near(double got, double ref, double mag, double rel = kRel<T>) {
  const double tol = rel * std::max(mag, 1.0);
  if (std::isnan(got) != std::isnan(ref)) {
    return ::testing::AssertionFailure() << "got " << got << ", want " << ref;
  }
  if (std::isnan(ref) || std::abs(got - ref) <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << ", want " << ref << " (diff " << std::abs(got - ref)
                                       << " > tol " << tol << ")";
}

template <typename T>
Kernels<T>& K() {
  return kernels<T>(cpu_backend());
}

template <typename T>
class CpuKernelsTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CpuKernelsTest, Types);

// -- the op table --------------------------------------------------------------

TEST(OpTable, NamesAreUniqueIdentifiersAndOutOfRangeOpsThrow) {
  std::set<std::string> names;
  for (const UnaryOpInfo& r : kUnaryOpTable) {
    const std::string name = r.name;
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    EXPECT_FALSE(name.empty());
    for (char ch : name) EXPECT_TRUE((ch >= 'a' && ch <= 'z') || ch == '_') << name;
    EXPECT_EQ(op_name(r.op), name);
    EXPECT_EQ(&unary_op_info(r.op), &r);
  }
  EXPECT_EQ(kUnaryOpTable.size(), kUnaryOpCount);
  const auto beyond = static_cast<UnaryOp>(kUnaryOpCount);
  EXPECT_THROW(unary_op_info(beyond), ValueError);
  EXPECT_STREQ(op_name(beyond), "unary");
}

// The cpu_epilogue column says which ops float gemm_bias_act hands to oneDNN
// as a post-op: such a product gets a primitive of its own (the cache grows),
// any other reuses the plain product's primitive and applies the op after.
TEST(OpTable, CpuEpilogueColumnMatchesTheOnednnPostOps) {
  std::int64_t m = 97;  // a shape per op no other test uses, above the small-product cut-off
  for (const UnaryOpInfo& r : kUnaryOpTable) {
    if (r.op == UnaryOp::Identity) continue;
    SCOPED_TRACE(r.name);
    const std::int64_t n = 61, k = 59;
    ++m;
    const auto A = random_vec<float>(m * k), B = random_vec<float>(n * k), bias = random_vec<float>(n);
    std::vector<float> C(m * n);
    K<float>().gemm_bias_act(false, true, m, n, k, A.data(), k, B.data(), k, bias.data(), UnaryOp::Identity, 0.f,
                             C.data(), n);
    const std::size_t before = cpu::onednn_matmul_cache_size();
    K<float>().gemm_bias_act(false, true, m, n, k, A.data(), k, B.data(), k, bias.data(), r.op,
                             float(magmadnn::testing::op_param(r)), C.data(), n);
    EXPECT_EQ(cpu::onednn_matmul_cache_size() > before, r.cpu_epilogue);
  }
}

// -- unary --------------------------------------------------------------------

// Inputs of each op, inside its domain (op table).
template <typename T>
std::vector<T> domain_vec(const UnaryOpInfo& r, std::size_t n) {
  return magmadnn::testing::op_inputs<T>(r, rng(), n);
}

// The references below are written independently of scalar_ops.h; an op of
// the table without one gets NaN, which fails every comparison by name.
double ref_f(UnaryOp op, double x, double p) {
  switch (op) {
    case UnaryOp::Identity: return x;
    case UnaryOp::Neg: return -x;
    case UnaryOp::Exp: return std::exp(x);
    case UnaryOp::Log: return std::log(x);
    case UnaryOp::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case UnaryOp::Relu: return x > 0 ? x : 0;
    case UnaryOp::Tanh: return std::tanh(x);
    case UnaryOp::Abs: return std::fabs(x);
    case UnaryOp::Sqrt: return std::sqrt(x);
    case UnaryOp::Square: return x * x;
    case UnaryOp::Reciprocal: return 1.0 / x;
    case UnaryOp::Pow: return std::pow(x, p);
    case UnaryOp::Scale: return x * p;
    case UnaryOp::AddScalar: return x + p;
    case UnaryOp::LeakyRelu: return x > 0 ? x : p * x;
    case UnaryOp::Gelu: return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case UnaryOp::Softplus: return std::log(1.0 + std::exp(x));
  }
  return std::nan("");
}

double ref_df(UnaryOp op, double x, double p) {
  const double pi = 3.14159265358979323846;
  switch (op) {
    case UnaryOp::Identity: return 1;
    case UnaryOp::Neg: return -1;
    case UnaryOp::Exp: return std::exp(x);
    case UnaryOp::Log: return 1 / x;
    case UnaryOp::Sigmoid: { const double s = 1 / (1 + std::exp(-x)); return s * (1 - s); }
    case UnaryOp::Relu: return x > 0 ? 1 : 0;
    case UnaryOp::Tanh: return 1 - std::tanh(x) * std::tanh(x);
    case UnaryOp::Abs: return x > 0 ? 1 : (x < 0 ? -1 : 0);
    case UnaryOp::Sqrt: return 0.5 / std::sqrt(x);
    case UnaryOp::Square: return 2 * x;
    case UnaryOp::Reciprocal: return -1 / (x * x);
    case UnaryOp::Pow: return p * std::pow(x, p - 1);
    case UnaryOp::Scale: return p;
    case UnaryOp::AddScalar: return 1;
    case UnaryOp::LeakyRelu: return x > 0 ? 1 : p;
    case UnaryOp::Gelu: return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * pi);
    case UnaryOp::Softplus: return 1 / (1 + std::exp(-x));
  }
  return std::nan("");
}

TYPED_TEST(CpuKernelsTest, UnaryForwardMatchesReference) {
  using T = TypeParam;
  // 50000 elements also exercises the threaded path.
  for (std::size_t n : {std::size_t(1), std::size_t(37), std::size_t(50000)}) {
    for (const UnaryOpInfo& c : kUnaryOpTable) {
      SCOPED_TRACE(std::string(c.name) + " n=" + std::to_string(n));
      const double p = magmadnn::testing::op_param(c);
      const auto x = domain_vec<T>(c, n);
      std::vector<T> y(n, T(-777));
      K<T>().unary(c.op, x.data(), y.data(), static_cast<std::int64_t>(n), T(p));
      for (std::size_t i = 0; i < n; ++i) {
        const double r = ref_f(c.op, x[i], p);
        ASSERT_TRUE(near<T>(y[i], r, std::abs(r) + std::abs(double(x[i])))) << "at " << i << " x=" << x[i];
      }
      // In place (y aliases x) gives the same values.
      std::vector<T> z = x;
      K<T>().unary(c.op, z.data(), z.data(), static_cast<std::int64_t>(n), T(p));
      EXPECT_EQ(z, y);
    }
  }
}

TYPED_TEST(CpuKernelsTest, UnaryStableInTheTails) {
  using T = TypeParam;
  const std::vector<T> x{T(-1000), T(-100), T(-30), T(30), T(100), T(1000)};
  std::vector<T> y(x.size());
  K<T>().unary(UnaryOp::Sigmoid, x.data(), y.data(), 6, T(0));
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_TRUE(std::isfinite(y[i]));
    EXPECT_TRUE(near<T>(y[i], ref_f(UnaryOp::Sigmoid, x[i], 0), 1e-30)) << x[i];
  }
  K<T>().unary(UnaryOp::Softplus, x.data(), y.data(), 6, T(0));
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_TRUE(std::isfinite(y[i])) << x[i];
    const double r = x[i] > 0 ? double(x[i]) + std::log1p(std::exp(-double(x[i]))) : std::log1p(std::exp(double(x[i])));
    EXPECT_TRUE(near<T>(y[i], r, std::abs(r))) << x[i];
  }
  EXPECT_EQ(y[0], T(0));  // softplus(-1000) underflows to exactly 0, not NaN
}

TYPED_TEST(CpuKernelsTest, UnaryBackwardMatchesReferenceAndFiniteDifferences) {
  using T = TypeParam;
  const std::size_t n = 4000;
  // Central differences: O(h^2) truncation against O(eps/h) rounding.
  const double h = std::is_same_v<T, float> ? 1e-2 : 1e-5;
  const double fd_rel = std::is_same_v<T, float> ? 2e-3 : 1e-7;
  for (const UnaryOpInfo& c : kUnaryOpTable) {
    SCOPED_TRACE(c.name);
    const double p = magmadnn::testing::op_param(c);
    const auto x = domain_vec<T>(c, n);
    const auto dy = random_vec<T>(n, -2, 2);
    std::vector<T> y(n), dx(n, T(-777));
    K<T>().unary(c.op, x.data(), y.data(), n, T(p));
    K<T>().unary_backward(c.op, x.data(), y.data(), dy.data(), dx.data(), n, T(p));
    std::vector<T> xp(n), xm(n), yp(n), ym(n);
    for (std::size_t i = 0; i < n; ++i) {
      xp[i] = static_cast<T>(double(x[i]) + h);
      xm[i] = static_cast<T>(double(x[i]) - h);
    }
    K<T>().unary(c.op, xp.data(), yp.data(), n, T(p));
    K<T>().unary(c.op, xm.data(), ym.data(), n, T(p));
    for (std::size_t i = 0; i < n; ++i) {
      const double d = ref_df(c.op, x[i], p);
      const double r = double(dy[i]) * d;
      ASSERT_TRUE(near<T>(dx[i], r, std::abs(r) + std::abs(dy[i]) * (1 + std::abs(double(x[i])))))
          << "at " << i << " x=" << x[i];
      // Central differences straddle the kinks at 0 (relu, abs, leaky_relu).
      if (std::abs(double(x[i])) < 2 * h) continue;
      const double fd = (double(yp[i]) - double(ym[i])) / (double(xp[i]) - double(xm[i]));
      ASSERT_TRUE(near<T>(dx[i], double(dy[i]) * fd, std::abs(dy[i]) * (1 + std::abs(fd)), fd_rel))
          << "finite difference at " << i << " x=" << x[i];
    }
    // dx may alias dy.
    std::vector<T> g = dy;
    K<T>().unary_backward(c.op, x.data(), y.data(), g.data(), g.data(), n, T(p));
    EXPECT_EQ(g, dx);
  }
}

// unary_backward reads what the op table's `grad` column says: the input it
// does not read may be garbage (NaN here), and for GradFrom::Either y in
// place of x gives the same gradient.
TYPED_TEST(CpuKernelsTest, UnaryBackwardReadsWhatTheTableSays) {
  using T = TypeParam;
  const std::size_t n = 257;
  const std::vector<T> nan(n, std::numeric_limits<T>::quiet_NaN());
  for (const UnaryOpInfo& c : kUnaryOpTable) {
    SCOPED_TRACE(c.name);
    const T p = T(magmadnn::testing::op_param(c));
    const auto x = domain_vec<T>(c, n);
    const auto dy = random_vec<T>(n, -2, 2);
    std::vector<T> y(n), want(n), got(n);
    K<T>().unary(c.op, x.data(), y.data(), n, p);
    K<T>().unary_backward(c.op, x.data(), y.data(), dy.data(), want.data(), n, p);
    if (c.grad == GradFrom::Y) {
      K<T>().unary_backward(c.op, nan.data(), y.data(), dy.data(), got.data(), n, p);
    } else {
      K<T>().unary_backward(c.op, x.data(), nan.data(), dy.data(), got.data(), n, p);
    }
    EXPECT_EQ(got, want);
    if (c.grad == GradFrom::Either) {
      K<T>().unary_backward(c.op, y.data(), nan.data(), dy.data(), got.data(), n, p);
      EXPECT_EQ(got, want) << "y in place of x";
    }
  }
}

TYPED_TEST(CpuKernelsTest, ReluGradientAtZeroIsZero) {
  using T = TypeParam;
  const std::vector<T> x{T(0), T(-0.0), T(1e-30), T(-1e-30)};
  const std::vector<T> dy{T(3), T(3), T(3), T(3)};
  std::vector<T> y(4), dx(4);
  K<T>().unary(UnaryOp::Relu, x.data(), y.data(), 4, T(0));
  K<T>().unary_backward(UnaryOp::Relu, x.data(), y.data(), dy.data(), dx.data(), 4, T(0));
  EXPECT_EQ(dx, (std::vector<T>{T(0), T(0), T(3), T(0)}));
}

// The fused activation + bias gradient of a linear layer against the two
// passes it replaces, for every op whose derivative follows from its output,
// on shapes that leave partial column blocks, one row, one column and no rows.
TYPED_TEST(CpuKernelsTest, UnaryBackwardColsumMatchesTheTwoPasses) {
  using T = TypeParam;
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes{{1, 1},   {1, 33},  {7, 31},  {3, 64},
                                                                   {100, 528}, {300, 17}, {257, 1}, {0, 5}};
  int checked = 0;
  for (const UnaryOpInfo& c : kUnaryOpTable) {
    if (!grad_from_output(c.op)) continue;
    SCOPED_TRACE(c.name);
    const double p = magmadnn::testing::op_param(c);
    for (const auto& [rows, cols] : shapes) {
      SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
      const std::size_t n = static_cast<std::size_t>(rows * cols);
      const auto x = domain_vec<T>(c, n);
      const auto dy = random_vec<T>(n, -2, 2);
      std::vector<T> y(n), want(n), got(n, T(-777)), db(static_cast<std::size_t>(cols), T(-777));
      K<T>().unary(c.op, x.data(), y.data(), static_cast<std::int64_t>(n), T(p));
      K<T>().unary_backward(c.op, y.data(), y.data(), dy.data(), want.data(), static_cast<std::int64_t>(n), T(p));
      K<T>().unary_backward_colsum(c.op, y.data(), dy.data(), got.data(), db.data(), rows, cols, T(p));
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(near<T>(got[i], want[i], std::abs(double(want[i])))) << "dx at " << i;
      }
      for (std::int64_t j = 0; j < cols; ++j) {
        double ref = 0, mag = 0;
        for (std::int64_t i = 0; i < rows; ++i) {
          ref += double(want[static_cast<std::size_t>(i * cols + j)]);
          mag += std::abs(double(want[static_cast<std::size_t>(i * cols + j)]));
        }
        ASSERT_TRUE(near<T>(db[static_cast<std::size_t>(j)], ref, mag)) << "db at column " << j;
      }
      // dx may alias dy.
      std::vector<T> g = dy, db2(static_cast<std::size_t>(cols));
      K<T>().unary_backward_colsum(c.op, y.data(), g.data(), g.data(), db2.data(), rows, cols, T(p));
      EXPECT_EQ(g, got);
      EXPECT_EQ(db2, db);
      ++checked;
    }
  }
  EXPECT_GE(checked, 3 * 8) << "fewer ops with a derivative from their output than sigmoid, relu and tanh";
}

// -- binary --------------------------------------------------------------------

struct Bcast {
  std::vector<std::int64_t> out, a, b;
};

BroadcastDesc desc_of(const Bcast& s) {
  BroadcastDesc d;
  d.ndim = static_cast<int>(s.out.size());
  auto strides = [&](const std::vector<std::int64_t>& in, std::int64_t* st) {
    const std::size_t shift = s.out.size() - in.size();
    std::int64_t acc = 1;
    for (int i = d.ndim - 1; i >= 0; --i) {
      if (std::size_t(i) < shift) {
        st[i] = 0;
        continue;
      }
      const std::int64_t dim = in[i - shift];
      st[i] = dim == 1 ? 0 : acc;
      acc *= dim;
    }
  };
  for (int i = 0; i < d.ndim; ++i) d.shape[i] = s.out[i];
  strides(s.a, d.a_strides);
  strides(s.b, d.b_strides);
  return d;
}

std::int64_t numel(const std::vector<std::int64_t>& s) {
  return std::accumulate(s.begin(), s.end(), std::int64_t(1), std::multiplies<>());
}

// Flat index into `in` of output element `flat` (NumPy broadcasting).
std::int64_t source_index(const std::vector<std::int64_t>& out, const std::vector<std::int64_t>& in,
                          std::int64_t flat) {
  const std::size_t shift = out.size() - in.size();
  std::int64_t idx = 0, stride = 1;
  for (int i = int(out.size()) - 1; i >= 0; --i) {
    const std::int64_t coord = flat % out[i];
    flat /= out[i];
    if (std::size_t(i) < shift) continue;
    const std::int64_t dim = in[i - shift];
    if (dim != 1) idx += coord * stride;
    stride *= dim;
  }
  return idx;
}

double ref_binary(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return a / b;
    case BinaryOp::Pow: return std::pow(a, b);
    case BinaryOp::Max: return std::max(a, b);
    case BinaryOp::Min: return std::min(a, b);
  }
  return 0;
}

const Bcast kPatterns[] = {
    {{37, 53}, {37, 53}, {37, 53}},              // same shape
    {{4, 5, 6}, {4, 5, 6}, {}},                  // b scalar
    {{4, 5, 6}, {1}, {4, 5, 6}},                 // a scalar
    {{64, 100}, {64, 100}, {100}},               // b a row (bias)
    {{300, 257}, {300, 257}, {1, 257}},          // row, threaded
    {{64, 100}, {64, 100}, {64, 1}},             // b a column
    {{64, 100}, {64, 1}, {64, 100}},             // a a column
    {{5, 6, 7}, {5, 1, 7}, {1, 6, 7}},           // 3-D mixed
    {{4, 6, 9}, {4, 6, 1}, {6, 9}},              // 3-D mixed, b missing an axis
    {{3, 4, 5, 6}, {3, 1, 5, 1}, {4, 1, 6}},     // 4-D both broadcast
    {{2, 3, 4}, {2, 3, 4}, {3, 1}},              // column in the middle
    {{200, 30, 20}, {200, 1, 20}, {30, 20}},     // mixed, threaded
    {{}, {}, {}},                                // scalars
};

TYPED_TEST(CpuKernelsTest, BinaryAllOpsAllBroadcastPatterns) {
  using T = TypeParam;
  const BinaryOp ops[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div,
                          BinaryOp::Pow, BinaryOp::Max, BinaryOp::Min};
  for (const auto& pat : kPatterns) {
    const BroadcastDesc d = desc_of(pat);
    const std::int64_t n = numel(pat.out);
    for (BinaryOp op : ops) {
      SCOPED_TRACE("op " + std::to_string(int(op)) + " out numel " + std::to_string(n) + " a ndim " +
                   std::to_string(pat.a.size()) + " b ndim " + std::to_string(pat.b.size()));
      // Positive bases for Pow, divisors away from 0 for Div.
      const bool pos = op == BinaryOp::Pow || op == BinaryOp::Div;
      const auto a = random_vec<T>(numel(pat.a), pos ? 0.5 : -2, 2);
      const auto b = random_vec<T>(numel(pat.b), pos ? 0.5 : -2, 2);
      std::vector<T> out(n, T(-777));
      K<T>().binary(op, a.data(), b.data(), out.data(), d);
      for (std::int64_t i = 0; i < n; ++i) {
        const double av = a[source_index(pat.out, pat.a, i)], bv = b[source_index(pat.out, pat.b, i)];
        const double r = ref_binary(op, av, bv);
        ASSERT_TRUE(near<T>(out[i], r, std::abs(r) * 4)) << "at " << i << ": " << av << ", " << bv;
      }
      if (pat.a == pat.out) {  // out may alias a when they have one shape
        std::vector<T> alias = a;
        K<T>().binary(op, alias.data(), b.data(), alias.data(), d);
        EXPECT_EQ(alias, out);
      }
    }
  }
}

TYPED_TEST(CpuKernelsTest, Axpy) {
  using T = TypeParam;
  for (std::size_t n : {std::size_t(13), std::size_t(70000)}) {
    const auto x = random_vec<T>(n), y0 = random_vec<T>(n);
    auto y = y0;
    K<T>().axpy(n, T(-0.75), x.data(), y.data());
    for (std::size_t i = 0; i < n; ++i) {
      const double r = double(y0[i]) - 0.75 * double(x[i]);
      ASSERT_TRUE(near<T>(y[i], r, std::abs(y0[i]) + std::abs(x[i])));
    }
  }
}

// -- gemm -----------------------------------------------------------------------

struct GemmSize {
  std::int64_t m, n, k;
};
// {1, 300, 400}: one row past the small-product cut-off, so float goes to
// oneDNN with a strided transposed row (cpu_gemm.cpp: pack_single_row).
const GemmSize kGemmSizes[] = {{7, 13, 5}, {1, 17, 1}, {128, 257, 64}, {1, 1, 1}, {33, 1, 70}, {3, 40, 300},
                               {1, 300, 400}};

// op(X)[i][j] from a stored row-major matrix with row stride ld.
template <typename T>
double at(const std::vector<T>& X, bool trans, std::int64_t ld, std::int64_t i, std::int64_t j) {
  return trans ? double(X[j * ld + i]) : double(X[i * ld + j]);
}

TYPED_TEST(CpuKernelsTest, GemmAllTransposesOddSizesAlphaBetaLeadingDims) {
  using T = TypeParam;
  for (const auto& s : kGemmSizes) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      for (auto [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{1.3, 0.7}, std::pair{-0.5, 1.0}}) {
        SCOPED_TRACE(::testing::Message() << "m=" << s.m << " n=" << s.n << " k=" << s.k << " ta=" << ta
                                          << " tb=" << tb << " alpha=" << alpha << " beta=" << beta);
        // Stored matrices with padded rows: lda/ldb/ldc exceed the widths.
        const std::int64_t a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k;
        const std::int64_t b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n;
        const std::int64_t lda = a_cols + 3, ldb = b_cols + 2, ldc = s.n + 5;
        const auto A = random_vec<T>(a_rows * lda), B = random_vec<T>(b_rows * ldb);
        auto C0 = random_vec<T>(s.m * ldc);
        if (beta == 0.0) {
          // beta == 0 must overwrite C, NaNs included.
          for (auto& c : C0) c = std::numeric_limits<T>::quiet_NaN();
        }
        auto C = C0;
        K<T>().gemm(ta, tb, s.m, s.n, s.k, T(alpha), A.data(), lda, B.data(), ldb, T(beta), C.data(), ldc);
        for (std::int64_t i = 0; i < s.m; ++i) {
          for (std::int64_t j = 0; j < s.n; ++j) {
            double acc = 0, mag = 0;
            for (std::int64_t p = 0; p < s.k; ++p) {
              const double prod = at(A, ta, lda, i, p) * at(B, tb, ldb, p, j);
              acc += prod;
              mag += std::abs(prod);
            }
            double r = alpha * acc, rmag = std::abs(alpha) * mag;
            if (beta != 0.0) {
              r += beta * double(C0[i * ldc + j]);
              rmag += std::abs(beta * double(C0[i * ldc + j]));
            }
            ASSERT_TRUE(near<T>(C[i * ldc + j], r, rmag)) << "C[" << i << "][" << j << "]";
          }
          // The padding between rows is not touched.
          for (std::int64_t j = s.n; j < ldc; ++j) {
            const T want = C0[i * ldc + j], got = C[i * ldc + j];
            ASSERT_TRUE((std::isnan(want) && std::isnan(got)) || want == got) << "padding C[" << i << "][" << j << "]";
          }
        }
      }
    }
  }
}

TYPED_TEST(CpuKernelsTest, GemmRepeatedCallsReusePrimitives) {
  using T = TypeParam;
  const std::int64_t m = 19, n = 23, k = 29;
  const auto A = random_vec<T>(m * k), B = random_vec<T>(k * n);
  std::vector<T> C(m * n), first;
  K<T>().gemm(false, false, m, n, k, T(1), A.data(), k, B.data(), n, T(0), C.data(), n);
  first = C;
  const std::size_t cached = cpu::onednn_matmul_cache_size();
  for (int step = 0; step < 5; ++step) {
    K<T>().gemm(false, false, m, n, k, T(1), A.data(), k, B.data(), n, T(0), C.data(), n);
    // alpha is a run-time argument: another alpha reuses the primitive too.
    K<T>().gemm(false, false, m, n, k, T(0.5 + step), A.data(), k, B.data(), n, T(0), C.data(), n);
  }
  K<T>().gemm(false, false, m, n, k, T(1), A.data(), k, B.data(), n, T(0), C.data(), n);
  EXPECT_EQ(C, first);
  // The first alpha != 1 adds at most one primitive; the loop adds no more.
  EXPECT_LE(cpu::onednn_matmul_cache_size(), cached + 1);
}

// SGD with weight decay calls the same product with the same beta every
// step. Each way of applying that beta gives the reference values, step after
// step, and the measured choice times a problem once, on a copy: the
// caller's C is written once per call.
TEST(CpuGemmBeta, SteadyBetaGivesTheReferenceOnEveryPathAndIsTimedOnce) {
  struct RestorePath {
    ~RestorePath() { cpu::set_gemm_beta_path(cpu::GemmBetaPath::Measure); }
  } restore;
  static int repetition = 0;  // a problem of its own each time (--gtest_repeat): a timed one stays timed
  const std::int64_t m = 70 + 2 * repetition++, n = 90, k = 40, lda = m + 3, ldb = n, ldc = n + 5;  // dY^T X
  const auto A = random_vec<float>(k * lda), B = random_vec<float>(k * ldb);
  const float alpha = -0.05f, beta = 0.99995f;
  for (const auto path : {cpu::GemmBetaPath::SumPostOp, cpu::GemmBetaPath::ScalePass, cpu::GemmBetaPath::Measure}) {
    cpu::set_gemm_beta_path(path);
    const std::size_t timed_before = cpu::gemm_beta_measurements();
    auto C = random_vec<float>(m * ldc);
    std::vector<double> ref(C.begin(), C.end());
    for (int step = 0; step < 4; ++step) {
      K<float>().gemm(true, false, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          double dot = 0, mag = std::abs(beta * ref[i * ldc + j]);
          for (std::int64_t p = 0; p < k; ++p) {
            dot += double(A[p * lda + i]) * B[p * ldb + j];
            mag += std::abs(alpha * double(A[p * lda + i]) * B[p * ldb + j]);
          }
          ref[i * ldc + j] = alpha * dot + beta * ref[i * ldc + j];
          ASSERT_TRUE(near<float>(C[i * ldc + j], ref[i * ldc + j], mag, 1e-5))
              << "path " << int(path) << " step " << step << " C[" << i << "][" << j << "]";
        }
      for (std::int64_t i = 0; i < m; ++i)  // the padding between rows is not touched
        for (std::int64_t j = n; j < ldc; ++j) ASSERT_EQ(C[i * ldc + j], float(ref[i * ldc + j]));
    }
    // The first call of a beta is never timed (it may be a one-off); the
    // second is, once, under Measure only.
    EXPECT_EQ(cpu::gemm_beta_measurements() - timed_before, path == cpu::GemmBetaPath::Measure ? 1u : 0u);
  }
  // Deterministic algorithms: no timing, and the scale pass's bits.
  const std::int64_t m2 = m + 1;  // a problem not timed yet
  auto C_rule = random_vec<float>(m2 * ldc);
  auto C_pass = C_rule;
  const auto A2 = random_vec<float>(k * (m2 + 3));
  const std::size_t timed_before = cpu::gemm_beta_measurements();
  for (int step = 0; step < 3; ++step) {
    {
      DeterministicScope det(true);
      K<float>().gemm(true, false, m2, n, k, alpha, A2.data(), m2 + 3, B.data(), ldb, beta, C_rule.data(), ldc);
    }
    cpu::set_gemm_beta_path(cpu::GemmBetaPath::ScalePass);
    K<float>().gemm(true, false, m2, n, k, alpha, A2.data(), m2 + 3, B.data(), ldb, beta, C_pass.data(), ldc);
    cpu::set_gemm_beta_path(cpu::GemmBetaPath::Measure);
  }
  EXPECT_EQ(cpu::gemm_beta_measurements(), timed_before);
  EXPECT_EQ(C_rule, C_pass);
}

TYPED_TEST(CpuKernelsTest, GemmStridedBatchedMatchesEachProduct) {
  // Every transpose combination, alpha/beta forms, padded leading dimensions
  // and batch strides with gaps; shapes on both sides of the small-product
  // cut-off (so float takes both the oneDNN batch and the per-product loop).
  using T = TypeParam;
  struct Case {
    std::int64_t m, n, k, batch;
  };
  for (const Case s : {Case{3, 5, 4, 7}, Case{33, 40, 36, 6}, Case{64, 70, 48, 3}, Case{1, 300, 200, 4}}) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      for (const auto [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{-0.5, 1.0}}) {
        const std::int64_t a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k;
        const std::int64_t b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n;
        const std::int64_t lda = a_cols + 1, ldb = b_cols + 2, ldc = s.n + 3;
        const std::int64_t sa = a_rows * lda + 5, sb = b_rows * ldb + 1, sc = s.m * ldc + 2;
        const auto A = random_vec<T>(sa * s.batch), B = random_vec<T>(sb * s.batch);
        const auto C0 = random_vec<T>(sc * s.batch);
        auto C = C0;
        cpu::gemm_strided_batched(ta, tb, s.m, s.n, s.k, T(alpha), A.data(), lda, sa, B.data(), ldb, sb, T(beta),
                                  C.data(), ldc, sc, s.batch);
        for (std::int64_t b = 0; b < s.batch; ++b) {
          const T* Ab = A.data() + b * sa;
          const T* Bb = B.data() + b * sb;
          for (std::int64_t i = 0; i < s.m; ++i)
            for (std::int64_t j = 0; j < s.n; ++j) {
              double acc = 0, mag = 0;
              for (std::int64_t p = 0; p < s.k; ++p) {
                const double x = ta ? Ab[p * lda + i] : Ab[i * lda + p];
                const double y = tb ? Bb[j * ldb + p] : Bb[p * ldb + j];
                acc += x * y;
                mag += std::abs(x * y);
              }
              const double c0 = C0[b * sc + i * ldc + j];
              ASSERT_TRUE(near<T>(C[b * sc + i * ldc + j], alpha * acc + beta * c0,
                                  std::abs(alpha) * mag + std::abs(beta * c0)))
                  << "batch " << b << " C[" << i << "][" << j << "] ta=" << ta << " tb=" << tb;
            }
          // Row padding and the gap between batch members stay untouched.
          for (std::int64_t i = 0; i < s.m; ++i)
            for (std::int64_t j = s.n; j < ldc && b * sc + i * ldc + j < sc * s.batch; ++j)
              ASSERT_EQ(C[b * sc + i * ldc + j], C0[b * sc + i * ldc + j]);
          for (std::int64_t g = s.m * ldc; g < sc; ++g) ASSERT_EQ(C[b * sc + g], C0[b * sc + g]);
        }
      }
    }
  }
  EXPECT_THROW(cpu::gemm_strided_batched(false, false, 2, 2, 2, T(1), static_cast<const T*>(nullptr), 2, 4,
                                         static_cast<const T*>(nullptr), 2, 4, T(0), static_cast<T*>(nullptr), 2, 4,
                                         -1),
               ValueError);
}

TEST(CpuKernels, GemmFromSeveralThreadsAtOnce) {
  // The primitive cache, scratchpads and streams are shared or per-thread;
  // concurrent products (same and different shapes) must match serial ones.
  const std::int64_t sizes[] = {64, 80, 64, 96};
  std::vector<std::vector<float>> A, B, want;
  for (std::int64_t s : sizes) {
    A.push_back(random_vec<float>(s * s));
    B.push_back(random_vec<float>(s * s));
    want.emplace_back(s * s);
    K<float>().gemm(false, true, s, s, s, 1.f, A.back().data(), s, B.back().data(), s, 0.f, want.back().data(), s);
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::int64_t s = sizes[t];
      std::vector<float> C(s * s);
      for (int rep = 0; rep < 50; ++rep) {
        K<float>().gemm(false, true, s, s, s, 1.f, A[t].data(), s, B[t].data(), s, 0.f, C.data(), s);
        // A race would leave garbage or another thread's result; rounding
        // differences from another thread split would be ~1e-6.
        for (std::int64_t i = 0; i < s * s; ++i) {
          if (std::abs(C[i] - want[t][i]) > 1e-4f) {
            ++mismatches[t];
            break;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, (std::vector<int>{0, 0, 0, 0}));
}

TYPED_TEST(CpuKernelsTest, GemmZeroK) {
  using T = TypeParam;
  std::vector<T> C{T(1), T(2), T(3), T(4)};
  K<T>().gemm(false, false, 2, 2, 0, T(1), nullptr, 1, nullptr, 2, T(0.5), C.data(), 2);
  EXPECT_EQ(C, (std::vector<T>{T(0.5), T(1), T(1.5), T(2)}));
}

TYPED_TEST(CpuKernelsTest, BlasGemmMatchesKernelGemm) {
  using T = TypeParam;
  const std::int64_t m = 31, n = 17, k = 45;
  const auto A = random_vec<T>(k * m), B = random_vec<T>(n * k);
  std::vector<T> C1(m * n), C2(m * n);
  cpu::blas_gemm(true, true, m, n, k, T(1), A.data(), m, B.data(), k, T(0), C1.data(), n);
  K<T>().gemm(true, true, m, n, k, T(1), A.data(), m, B.data(), k, T(0), C2.data(), n);
  for (std::int64_t i = 0; i < m * n; ++i) ASSERT_TRUE(near<T>(C1[i], C2[i], double(k)));
}

TYPED_TEST(CpuKernelsTest, GemmBiasActEveryActivationWithAndWithoutBias) {
  using T = TypeParam;
  const GemmSize sizes[] = {{7, 13, 5}, {64, 100, 30}, {1, 3, 1}};
  for (const auto& s : sizes) {
    for (const UnaryOpInfo& row : kUnaryOpTable) {
      if (row.op != UnaryOp::Identity && !row.activation) continue;
      const UnaryOp act = row.op;
      for (bool with_bias : {false, true}) {
        for (auto [ta, tb] : {std::pair{false, true}, std::pair{false, false}, std::pair{true, false}}) {
          SCOPED_TRACE(::testing::Message() << "m=" << s.m << " n=" << s.n << " k=" << s.k << " act=" << row.name
                                            << " bias=" << with_bias << " ta=" << ta << " tb=" << tb);
          const double p = magmadnn::testing::op_param(row);
          const std::int64_t lda = (ta ? s.m : s.k) + 1, ldb = (tb ? s.k : s.n) + 2, ldc = s.n + 3;
          const auto A = random_vec<T>((ta ? s.k : s.m) * lda, -2, 2);
          const auto B = random_vec<T>((tb ? s.n : s.k) * ldb, -2, 2);
          const auto bias = random_vec<T>(s.n, -1, 1);
          auto C = random_vec<T>(s.m * ldc);
          const auto C0 = C;
          K<T>().gemm_bias_act(ta, tb, s.m, s.n, s.k, A.data(), lda, B.data(), ldb,
                               with_bias ? bias.data() : nullptr, act, T(p), C.data(), ldc);
          for (std::int64_t i = 0; i < s.m; ++i) {
            for (std::int64_t j = 0; j < s.n; ++j) {
              double acc = with_bias ? double(bias[j]) : 0.0, mag = std::abs(acc);
              for (std::int64_t q = 0; q < s.k; ++q) {
                const double prod = at(A, ta, lda, i, q) * at(B, tb, ldb, q, j);
                acc += prod;
                mag += std::abs(prod);
              }
              const double r = ref_f(act, acc, p);
              // The activations are at most ~1.13-Lipschitz; oneDNN's own
              // float approximations of them add a few ulps.
              ASSERT_TRUE(near<T>(C[i * ldc + j], r, 2 * mag + 1)) << "C[" << i << "][" << j << "]";
            }
            for (std::int64_t j = s.n; j < ldc; ++j) ASSERT_EQ(C[i * ldc + j], C0[i * ldc + j]);
          }
        }
      }
    }
  }
}

// -- reduce, argmax ----------------------------------------------------------

struct Split3 {
  std::int64_t outer, axis, inner;
};
// Serial and threaded, row-wise and column-block, and axis-split (few rows) paths.
const Split3 kSplits[] = {{1, 1000, 1}, {7, 13, 1},  {5, 9, 11}, {1, 300, 300}, {3, 1, 4},
                          {2, 77, 513}, {4, 4, 1}, {40, 2000, 1}, {20, 50, 300}};

TYPED_TEST(CpuKernelsTest, ReduceEveryOpSeveralAxes) {
  using T = TypeParam;
  const ReduceOp ops[] = {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min};
  for (const auto& s : kSplits) {
    const auto x = random_vec<T>(s.outer * s.axis * s.inner, -3, 5);
    for (ReduceOp op : ops) {
      SCOPED_TRACE(::testing::Message() << "op=" << int(op) << " [" << s.outer << ", " << s.axis << ", " << s.inner
                                        << "]");
      std::vector<T> y(s.outer * s.inner, T(-777));
      K<T>().reduce(op, x.data(), y.data(), s.outer, s.axis, s.inner);
      for (std::int64_t o = 0; o < s.outer; ++o) {
        for (std::int64_t j = 0; j < s.inner; ++j) {
          double sum = 0, mag = 0, mx = -1e300, mn = 1e300;
          for (std::int64_t a = 0; a < s.axis; ++a) {
            const double v = x[(o * s.axis + a) * s.inner + j];
            sum += v;
            mag += std::abs(v);
            mx = std::max(mx, v);
            mn = std::min(mn, v);
          }
          const double got = y[o * s.inner + j];
          switch (op) {
            case ReduceOp::Sum: ASSERT_TRUE(near<T>(got, sum, mag)); break;
            case ReduceOp::Mean: ASSERT_TRUE(near<T>(got, sum / s.axis, mag / s.axis)); break;
            case ReduceOp::Max: ASSERT_EQ(got, mx); break;
            case ReduceOp::Min: ASSERT_EQ(got, mn); break;
          }
        }
      }
    }
  }
}

TEST(CpuKernels, FloatSumIsAccurateOverLongAxes) {
  // A float running sum stops growing at 2^24; the kernel must not.
  const std::int64_t n = (std::int64_t(1) << 24) + 4096;
  std::vector<float> x(n, 1.0f);
  float y = 0;
  K<float>().reduce(ReduceOp::Sum, x.data(), &y, 1, n, 1);
  EXPECT_EQ(double(y), double(n));
  // Also down a long column.
  std::vector<float> col(2 * ((std::int64_t(1) << 23) + 1000), 0.1f);
  float ys[2];
  K<float>().reduce(ReduceOp::Sum, col.data(), ys, 1, std::int64_t(col.size() / 2), 2);
  EXPECT_NEAR(ys[0], 0.1 * double(col.size() / 2), 1e-6 * 0.1 * double(col.size() / 2));
}

TYPED_TEST(CpuKernelsTest, ArgmaxRandomAndTies) {
  using T = TypeParam;
  for (const auto& s : kSplits) {
    const auto x = random_vec<T>(s.outer * s.axis * s.inner, -3, 5);
    std::vector<std::int64_t> idx(s.outer * s.inner, -1);
    K<T>().argmax(x.data(), idx.data(), s.outer, s.axis, s.inner);
    for (std::int64_t o = 0; o < s.outer; ++o) {
      for (std::int64_t j = 0; j < s.inner; ++j) {
        std::int64_t best = 0;
        for (std::int64_t a = 1; a < s.axis; ++a) {
          if (x[(o * s.axis + a) * s.inner + j] > x[(o * s.axis + best) * s.inner + j]) best = a;
        }
        ASSERT_EQ(idx[o * s.inner + j], best) << "o=" << o << " j=" << j;
      }
    }
  }
  // Ties: the first maximum wins, along rows and down columns.
  const std::vector<T> rows{T(1), T(5), T(2), T(5), T(5),   // max 5 first at 1
                            T(7), T(7), T(7), T(7), T(7),   // all equal: 0
                            T(-1), T(-3), T(-1), T(-2), T(-9)};
  std::vector<std::int64_t> r(3);
  K<T>().argmax(rows.data(), r.data(), 3, 5, 1);
  EXPECT_EQ(r, (std::vector<std::int64_t>{1, 0, 0}));
  // Same data seen as [1, 3, 5]: argmax down each column.
  std::vector<std::int64_t> c(5);
  K<T>().argmax(rows.data(), c.data(), 1, 3, 5);
  EXPECT_EQ(c, (std::vector<std::int64_t>{1, 1, 1, 1, 1}));
  const std::vector<T> cols{T(2), T(3), T(2), T(3)};  // [1, 2, 2]: column ties
  std::vector<std::int64_t> ct(2);
  K<T>().argmax(cols.data(), ct.data(), 1, 2, 2);
  EXPECT_EQ(ct, (std::vector<std::int64_t>{0, 0}));
}

// -- softmax -------------------------------------------------------------------

TYPED_TEST(CpuKernelsTest, SoftmaxAndLogSoftmaxForward) {
  using T = TypeParam;
  const std::int64_t rows = 37, cols = 101;
  for (double shift : {0.0, 1000.0, -1000.0}) {
    auto x = random_vec<T>(rows * cols, -5, 5);
    for (auto& v : x) v = static_cast<T>(double(v) + shift);
    std::vector<T> y(x.size()), ly(x.size());
    K<T>().softmax(x.data(), y.data(), rows, cols, false);
    K<T>().softmax(x.data(), ly.data(), rows, cols, true);
    for (std::int64_t r = 0; r < rows; ++r) {
      double mx = -1e300;
      for (std::int64_t j = 0; j < cols; ++j) mx = std::max(mx, double(x[r * cols + j]));
      double s = 0;
      for (std::int64_t j = 0; j < cols; ++j) s += std::exp(double(x[r * cols + j]) - mx);
      double row_sum = 0;
      for (std::int64_t j = 0; j < cols; ++j) {
        const double z = double(x[r * cols + j]) - mx;
        const double ref = std::exp(z) / s, lref = z - std::log(s);
        const T got = y[r * cols + j];
        ASSERT_TRUE(std::isfinite(got) && std::isfinite(ly[r * cols + j]));
        ASSERT_TRUE(near<T>(got, ref, 1e-30, kRel<T> / 100 + (std::is_same_v<T, float> ? 1e-7 : 1e-15)))
            << "shift " << shift;
        // x - max is exact in float only up to x's ulp, so the scale is |x|.
        ASSERT_TRUE(near<T>(ly[r * cols + j], lref, std::abs(lref) + std::abs(shift) * 1e-2)) << "shift " << shift;
        row_sum += got;
      }
      ASSERT_TRUE(near<T>(row_sum, 1.0, 1.0)) << "row " << r;
    }
    // In place gives the same.
    auto z = x;
    K<T>().softmax(z.data(), z.data(), rows, cols, false);
    EXPECT_EQ(z, y);
    z = x;
    K<T>().softmax(z.data(), z.data(), rows, cols, true);
    EXPECT_EQ(z, ly);
  }
}

TYPED_TEST(CpuKernelsTest, SoftmaxBackwardMatchesReferenceAndFiniteDifferences) {
  using T = TypeParam;
  const std::int64_t rows = 9, cols = 17;
  for (bool log : {false, true}) {
    SCOPED_TRACE(log ? "log-softmax" : "softmax");
    const auto x = random_vec<T>(rows * cols, -3, 3);
    const auto dy = random_vec<T>(rows * cols, -1, 1);
    std::vector<T> y(x.size()), dx(x.size());
    K<T>().softmax(x.data(), y.data(), rows, cols, log);
    K<T>().softmax_backward(y.data(), dy.data(), dx.data(), rows, cols, log);
    for (std::int64_t r = 0; r < rows; ++r) {
      double dot = 0, sdy = 0;
      for (std::int64_t j = 0; j < cols; ++j) {
        dot += double(dy[r * cols + j]) * double(y[r * cols + j]);
        sdy += double(dy[r * cols + j]);
      }
      for (std::int64_t j = 0; j < cols; ++j) {
        const double yy = y[r * cols + j], g = dy[r * cols + j];
        const double ref = log ? g - std::exp(yy) * sdy : yy * (g - dot);
        ASSERT_TRUE(near<T>(dx[r * cols + j], ref, 1.0 + std::abs(sdy)));
      }
    }
    // d/dx_i of L = sum(dy * f(x)) by central differences, in double only
    // (float's rounding swamps the differences).
    if constexpr (std::is_same_v<T, double>) {
      const double h = 1e-6;
      for (std::int64_t i = 0; i < rows * cols; i += 7) {
        auto xp = x, xm = x;
        xp[i] += h;
        xm[i] -= h;
        std::vector<T> yp(x.size()), ym(x.size());
        K<T>().softmax(xp.data(), yp.data(), rows, cols, log);
        K<T>().softmax(xm.data(), ym.data(), rows, cols, log);
        double lp = 0, lm = 0;
        for (std::size_t q = 0; q < x.size(); ++q) {
          lp += dy[q] * yp[q];
          lm += dy[q] * ym[q];
        }
        ASSERT_NEAR(dx[i], (lp - lm) / (2 * h), 1e-7) << "element " << i;
      }
    }
  }
}

// The fused softmax cross-entropy against a double-precision reference
// (log-softmax by its definition, then the sums), on one-hot and soft
// targets, a row with logits of 1000 (exp would overflow unshifted), and
// sizes under and over the threading threshold.
TYPED_TEST(CpuKernelsTest, SoftmaxXentMatchesReference) {
  using T = TypeParam;
  for (const auto& [rows, cols] : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}, {3, 10}, {100, 10}, {700, 37}}) {
    SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
    const std::size_t n = static_cast<std::size_t>(rows * cols);
    auto z = random_vec<T>(n, -4, 4);
    for (std::int64_t j = 0; j < cols; ++j) z[static_cast<std::size_t>(j)] = T(1000) + T(j);  // row 0: huge logits
    std::vector<T> y(n, T(0));
    for (std::int64_t r = 0; r < rows; ++r) {
      if (r % 2 == 0) {
        y[static_cast<std::size_t>(r * cols + (r * 7) % cols)] = T(1);  // one-hot
      } else {
        for (std::int64_t j = 0; j < cols; ++j) y[static_cast<std::size_t>(r * cols + j)] = T(1) / T(cols + 1);  // soft, sums to < 1
      }
    }
    std::vector<T> logp(n), dz(n);
    double total = -1;
    ASSERT_TRUE(K<T>().softmax_xent(z.data(), y.data(), logp.data(), rows, cols, &total));
    const T s = T(0.37);
    ASSERT_TRUE(K<T>().softmax_xent_backward(logp.data(), y.data(), dz.data(), rows, cols, s));
    double ref_total = 0, mag = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      double mx = -1e300, se = 0, ysum = 0;
      for (std::int64_t j = 0; j < cols; ++j) mx = std::max(mx, double(z[r * cols + j]));
      for (std::int64_t j = 0; j < cols; ++j) se += std::exp(double(z[r * cols + j]) - mx);
      for (std::int64_t j = 0; j < cols; ++j) ysum += double(y[r * cols + j]);
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::size_t i = static_cast<std::size_t>(r * cols + j);
        const double lp = double(z[i]) - mx - std::log(se);
        ASSERT_TRUE(near<T>(logp[i], lp, std::abs(double(z[i])) + std::abs(mx))) << "logp at " << i;
        ref_total += double(y[i]) * lp;
        mag += std::abs(double(y[i]) * lp);
        const double g = double(s) * (std::exp(lp) * ysum - double(y[i]));
        ASSERT_TRUE(near<T>(dz[i], g, double(s) * (std::exp(lp) * ysum + std::abs(double(y[i]))))) << "dz at " << i;
      }
    }
    EXPECT_TRUE(near<T>(total, ref_total, mag + double(rows)));
  }
}

// -- permute ----------------------------------------------------------------------

void check_permute_case(const std::vector<std::int64_t>& shape, const std::vector<int>& perm) {
  SCOPED_TRACE(::testing::Message() << "ndim " << shape.size() << " perm " << ::testing::PrintToString(perm)
                                    << " shape " << ::testing::PrintToString(shape));
  const int nd = static_cast<int>(shape.size());
  const std::int64_t n = numel(shape);
  const auto x = random_vec<double>(n);
  std::vector<double> y(n, -777.0);
  K<double>().permute(x.data(), y.data(), nd, shape.data(), perm.data());
  std::vector<float> xf(x.begin(), x.end()), yf(n, -777.f);
  K<float>().permute(xf.data(), yf.data(), nd, shape.data(), perm.data());

  std::vector<std::int64_t> xstride(nd, 1), oshape(nd);
  for (int i = nd - 2; i >= 0; --i) xstride[i] = xstride[i + 1] * shape[i + 1];
  for (int i = 0; i < nd; ++i) oshape[i] = shape[perm[i]];
  for (std::int64_t f = 0; f < n; ++f) {
    std::int64_t rem = f, src = 0;
    for (int i = nd - 1; i >= 0; --i) {
      const std::int64_t c = rem % oshape[i];
      rem /= oshape[i];
      src += c * xstride[perm[i]];
    }
    ASSERT_EQ(y[f], x[src]) << "y flat " << f;
    ASSERT_EQ(yf[f], xf[src]) << "float y flat " << f;
  }
}

TEST(CpuKernels, Permute2D3D4D) {
  check_permute_case({37, 53}, {1, 0});
  check_permute_case({300, 517}, {1, 0});  // threaded, many tiles
  check_permute_case({1, 64}, {1, 0});
  check_permute_case({64, 1}, {1, 0});
  check_permute_case({37, 53}, {0, 1});
  std::vector<int> p3{0, 1, 2};
  do {
    check_permute_case({4, 5, 6}, p3);
    check_permute_case({33, 2, 45}, p3);
  } while (std::next_permutation(p3.begin(), p3.end()));
  for (const auto& p4 : std::vector<std::vector<int>>{
           {0, 2, 3, 1}, {0, 3, 1, 2}, {3, 2, 1, 0}, {0, 1, 2, 3}, {1, 0, 2, 3}, {2, 0, 3, 1}, {0, 1, 3, 2}}) {
    check_permute_case({3, 4, 5, 6}, p4);
    check_permute_case({2, 1, 37, 40}, p4);
    check_permute_case({8, 16, 9, 35}, p4);
  }
  check_permute_case({2, 3, 1, 4, 2, 3, 2, 2}, {7, 0, 5, 2, 3, 1, 6, 4});  // 8-D
}

}  // namespace
