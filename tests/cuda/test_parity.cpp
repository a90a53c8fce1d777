// Backend parity harness (after ggml's test-backend-ops): one case per kernel
// and variant, each run on the same random inputs through the CPU backend
// (the reference) and the backend under test, and compared within a
// tolerance that fits the operation (exact for data movement, a few ulps for
// transcendental functions, accumulation-order slack for products and sums).
// The unary and gemm_bias_act cases loop over the op table
// (backend/unary_op_table.h), so a new op is compared without new code here.
//
//   MAGMADNN_PARITY_FILTER=gemm    runs only the cases whose name contains "gemm"
//   MAGMADNN_PARITY_DUT=cpu        tests the CPU backend against itself: a check
//                                  of the harness, runnable without a GPU
//
// Without a GPU (and with the default device under test, cuda) every case
// skips with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "magmadnn/backend/backend.h"
#include "magmadnn/backend/registry.h"
#include "magmadnn/backend/unary_op_table.h"
#include "magmadnn/core/half.h"
#include "support/gpu.h"
#include "support/op_table.h"

using namespace magmadnn;
using magmadnn::testing::op_inputs;
using magmadnn::testing::op_param;

namespace {

// -- the backends --------------------------------------------------------------------

bool dut_is_cpu() {
  const char* e = std::getenv("MAGMADNN_PARITY_DUT");
  return e && std::string(e) == "cpu";
}

// A buffer in the memory of the backend under test, freed on scope exit.
class DutBuffer {
 public:
  DutBuffer(Backend& b, std::size_t bytes) : b_(b), bytes_(bytes), p_(bytes ? b.allocate(bytes, 0) : nullptr) {}
  ~DutBuffer() {
    if (p_) b_.deallocate(p_, bytes_, 0);
  }
  DutBuffer(DutBuffer&& o) noexcept : b_(o.b_), bytes_(o.bytes_), p_(std::exchange(o.p_, nullptr)) {}
  DutBuffer(const DutBuffer&) = delete;
  DutBuffer& operator=(const DutBuffer&) = delete;
  DutBuffer& operator=(DutBuffer&&) = delete;

  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  void upload(const void* src) {
    if (bytes_) b_.copy(p_, src, bytes_, host() ? CopyKind::HostToHost : CopyKind::HostToDevice, 0);
  }
  void download(void* dst) const {
    if (bytes_) b_.copy(dst, p_, bytes_, host() ? CopyKind::HostToHost : CopyKind::DeviceToHost, 0);
  }

 private:
  bool host() const { return b_.kind() == DeviceKind::CPU; }
  Backend& b_;
  std::size_t bytes_;
  void* p_;
};

template <typename T>
DutBuffer to_dut(Backend& b, const std::vector<T>& v) {
  DutBuffer d(b, v.size() * sizeof(T));
  d.upload(v.data());
  return d;
}

template <typename T>
std::vector<T> from_dut(const DutBuffer& d, std::size_t n) {
  std::vector<T> v(n);
  d.download(v.data());
  return v;
}

// -- inputs and comparisons -------------------------------------------------------------

template <typename T>
std::vector<T> random_vec(std::mt19937_64& rng, std::size_t n, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(u(rng));
  return v;
}

// Magnitudes in [lo, hi] with a random sign: keeps divisors away from zero.
template <typename T>
std::vector<T> random_signed(std::mt19937_64& rng, std::size_t n, double lo, double hi) {
  std::vector<T> v = random_vec<T>(rng, n, lo, hi);
  std::bernoulli_distribution coin(0.5);
  for (auto& x : v)
    if (coin(rng)) x = -x;
  return v;
}

struct Tol {
  double rtol, atol;
};

template <typename T>
::testing::AssertionResult all_close(const char* what, const std::vector<T>& ref, const std::vector<T>& got, Tol tol) {
  if (ref.size() != got.size())
    return ::testing::AssertionFailure() << what << ": " << got.size() << " values, expected " << ref.size();
  std::size_t bad = 0, worst = 0;
  double worst_excess = -1;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double r = static_cast<double>(ref[i]), g = static_cast<double>(got[i]);
    if (std::isnan(r) && std::isnan(g)) continue;
    const double err = std::abs(r - g), allowed = tol.atol + tol.rtol * std::abs(r);
    if (!(err <= allowed)) {  // NaN on one side only fails too
      ++bad;
      const double excess = std::isnan(err) ? std::numeric_limits<double>::infinity() : err / allowed;
      if (excess > worst_excess) {
        worst_excess = excess;
        worst = i;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(17);
  os << what << ": " << bad << " of " << ref.size() << " values differ (rtol " << tol.rtol << ", atol " << tol.atol
     << "); worst at " << worst << ": reference " << static_cast<double>(ref[worst]) << ", backend "
     << static_cast<double>(got[worst]);
  return ::testing::AssertionFailure() << os.str();
}

template <typename T>
::testing::AssertionResult all_equal(const char* what, const std::vector<T>& ref, const std::vector<T>& got) {
  if (ref.size() != got.size())
    return ::testing::AssertionFailure() << what << ": " << got.size() << " values, expected " << ref.size();
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (std::memcmp(&ref[i], &got[i], sizeof(T)) != 0) {
      std::ostringstream os;
      os.precision(17);
      if constexpr (std::is_arithmetic_v<T>) {
        os << what << ": first difference at " << i << ": reference " << ref[i] << ", backend " << got[i];
      } else {
        os << what << ": first difference at " << i << ": reference " << static_cast<float>(ref[i]) << ", backend "
           << static_cast<float>(got[i]);
      }
      return ::testing::AssertionFailure() << os.str();
    }
  }
  return ::testing::AssertionSuccess();
}

// Tolerances per family, for float and double.
template <typename T>
constexpr bool kF32 = std::is_same_v<T, float>;
template <typename T>
Tol tol_elementwise() {
  return kF32<T> ? Tol{1e-5, 1e-6} : Tol{1e-12, 1e-14};
}
template <typename T>
Tol tol_product() {
  return kF32<T> ? Tol{1e-4, 1e-4} : Tol{1e-11, 1e-12};
}
template <typename T>
Tol tol_sum() {
  return kF32<T> ? Tol{1e-6, 1e-6} : Tol{1e-12, 1e-9};
}

// -- the case table ---------------------------------------------------------------------

struct ParityCase {
  std::string name;
  std::function<void(Backend& ref, Backend& dut, std::mt19937_64& rng)> run;
};

void PrintTo(const ParityCase& c, std::ostream* os) { *os << c.name; }

template <typename T>
const char* tname() {
  return kF32<T> ? "f32" : "f64";
}

// Output shape `out`; an operand's shape has the same rank with 1 on its
// broadcast axes.
BroadcastDesc broadcast(const std::vector<std::int64_t>& out, const std::vector<std::int64_t>& a,
                        const std::vector<std::int64_t>& b) {
  BroadcastDesc d;
  d.ndim = static_cast<int>(out.size());
  std::int64_t sa = 1, sb = 1;
  for (int i = d.ndim - 1; i >= 0; --i) {
    d.shape[i] = out[i];
    d.a_strides[i] = a[i] == 1 && out[i] != 1 ? 0 : sa;
    d.b_strides[i] = b[i] == 1 && out[i] != 1 ? 0 : sb;
    sa *= a[i];
    sb *= b[i];
  }
  return d;
}

std::int64_t numel(const std::vector<std::int64_t>& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

template <typename T>
void add_unary_cases(std::vector<ParityCase>& cases) {
  for (const UnaryOpInfo& row : kUnaryOpTable) {
    const UnaryOp op = row.op;
    const std::string base = std::string(row.name) + "_" + tname<T>();
    cases.push_back({"unary_" + base, [op, row](Backend& ref, Backend& dut, std::mt19937_64& rng) {
                       const std::size_t n = 10007;
                       const T p = T(op_param(row));
                       const std::vector<T> x = op_inputs<T>(row, rng, n);
                       std::vector<T> y(n);
                       kernels<T>(ref).unary(op, x.data(), y.data(), n, p);
                       DutBuffer dx = to_dut(dut, x), dy(dut, n * sizeof(T));
                       kernels<T>(dut).unary(op, dx.as<T>(), dy.as<T>(), n, p);
                       EXPECT_TRUE(all_close("y", y, from_dut<T>(dy, n), tol_elementwise<T>()));
                       // In place: y aliases x.
                       std::vector<T> inplace = x;
                       kernels<T>(ref).unary(op, inplace.data(), inplace.data(), n, p);
                       kernels<T>(dut).unary(op, dx.as<T>(), dx.as<T>(), n, p);
                       EXPECT_TRUE(all_close("y in place", inplace, from_dut<T>(dx, n), tol_elementwise<T>()));
                     }});
    cases.push_back({"unary_backward_" + base, [op, row](Backend& ref, Backend& dut, std::mt19937_64& rng) {
                       const std::size_t n = 10007;
                       const T p = T(op_param(row));
                       const std::vector<T> x = op_inputs<T>(row, rng, n);
                       const std::vector<T> g = random_vec<T>(rng, n, -2.0, 2.0);
                       std::vector<T> y(n), dx(n);
                       kernels<T>(ref).unary(op, x.data(), y.data(), n, p);  // the same y feeds both backends
                       kernels<T>(ref).unary_backward(op, x.data(), y.data(), g.data(), dx.data(), n, p);
                       DutBuffer bx = to_dut(dut, x), by = to_dut(dut, y), bg = to_dut(dut, g), bdx(dut, n * sizeof(T));
                       kernels<T>(dut).unary_backward(op, bx.as<T>(), by.as<T>(), bg.as<T>(), bdx.as<T>(), n, p);
                       EXPECT_TRUE(all_close("dx", dx, from_dut<T>(bdx, n), tol_elementwise<T>()));
                       // dx aliases dy.
                       std::vector<T> inplace = g;
                       kernels<T>(ref).unary_backward(op, x.data(), y.data(), inplace.data(), inplace.data(), n, p);
                       kernels<T>(dut).unary_backward(op, bx.as<T>(), by.as<T>(), bg.as<T>(), bg.as<T>(), n, p);
                       EXPECT_TRUE(all_close("dx in place", inplace, from_dut<T>(bg, n), tol_elementwise<T>()));
                     }});
  }
}

struct BroadcastShape {
  const char* name;
  std::vector<std::int64_t> out, a, b;
};

template <typename T>
void add_binary_cases(std::vector<ParityCase>& cases) {
  const BroadcastShape shapes[] = {
      {"same", {37, 53}, {37, 53}, {37, 53}},
      {"scalar_b", {37, 53}, {37, 53}, {1, 1}},
      {"scalar_a", {37, 53}, {1, 1}, {37, 53}},
      {"row_b", {37, 53}, {37, 53}, {1, 53}},
      {"column_b", {37, 53}, {37, 53}, {37, 1}},
      {"outer", {4, 5, 6}, {4, 1, 6}, {1, 5, 1}},
      {"rank4", {2, 3, 4, 5}, {2, 1, 4, 1}, {1, 3, 1, 5}},
  };
  for (BinaryOp op :
       {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Pow, BinaryOp::Max, BinaryOp::Min}) {
    for (const BroadcastShape& s : shapes) {
      const std::string name = std::string("binary_") + op_name(op) + "_" + s.name + "_" + tname<T>();
      cases.push_back({name, [op, s](Backend& ref, Backend& dut, std::mt19937_64& rng) {
                         const BroadcastDesc d = broadcast(s.out, s.a, s.b);
                         const std::size_t na = numel(s.a), nb = numel(s.b), n = numel(s.out);
                         const std::vector<T> a =
                             op == BinaryOp::Pow ? random_vec<T>(rng, na, 0.5, 2.0) : random_vec<T>(rng, na, -3.0, 3.0);
                         const std::vector<T> b = op == BinaryOp::Div ? random_signed<T>(rng, nb, 0.5, 2.0)
                                                                      : random_vec<T>(rng, nb, -2.0, 2.0);
                         std::vector<T> out(n);
                         kernels<T>(ref).binary(op, a.data(), b.data(), out.data(), d);
                         DutBuffer da = to_dut(dut, a), db = to_dut(dut, b), dout(dut, n * sizeof(T));
                         kernels<T>(dut).binary(op, da.as<T>(), db.as<T>(), dout.as<T>(), d);
                         EXPECT_TRUE(all_close("out", out, from_dut<T>(dout, n), tol_elementwise<T>()));
                         if (na == n) {  // out may alias an input of its own shape
                           std::vector<T> inplace = a;
                           kernels<T>(ref).binary(op, inplace.data(), b.data(), inplace.data(), d);
                           kernels<T>(dut).binary(op, da.as<T>(), db.as<T>(), da.as<T>(), d);
                           EXPECT_TRUE(all_close("out aliasing a", inplace, from_dut<T>(da, n), tol_elementwise<T>()));
                         }
                       }});
    }
  }
}

template <typename T>
void add_blas1_cases(std::vector<ParityCase>& cases) {
  cases.push_back({std::string("fill_copy_axpy_") + tname<T>(), [](Backend& ref, Backend& dut, std::mt19937_64& rng) {
                     const std::size_t n = 100003;
                     std::vector<T> f(n);
                     kernels<T>(ref).fill(f.data(), n, T(-0.375));
                     DutBuffer df(dut, n * sizeof(T));
                     kernels<T>(dut).fill(df.as<T>(), n, T(-0.375));
                     EXPECT_TRUE(all_equal("fill", f, from_dut<T>(df, n)));

                     const std::vector<T> x = random_vec<T>(rng, n, -1.0, 1.0), y0 = random_vec<T>(rng, n, -1.0, 1.0);
                     DutBuffer dx = to_dut(dut, x), dc(dut, n * sizeof(T));
                     kernels<T>(dut).copy(dx.as<T>(), dc.as<T>(), n);
                     EXPECT_TRUE(all_equal("copy", x, from_dut<T>(dc, n)));

                     std::vector<T> y = y0;
                     kernels<T>(ref).axpy(n, T(0.625), x.data(), y.data());
                     DutBuffer dy = to_dut(dut, y0);
                     kernels<T>(dut).axpy(n, T(0.625), dx.as<T>(), dy.as<T>());
                     EXPECT_TRUE(all_close("axpy", y, from_dut<T>(dy, n), tol_elementwise<T>()));
                   }});
}

// Stored operand of a row-major product: op(X) is r x c; X itself is stored
// c x r when transposed; `pad` extra elements per stored row.
struct Stored {
  std::int64_t rows, cols, ld;
  std::size_t size() const { return static_cast<std::size_t>(rows > 0 ? (rows - 1) * ld + cols : 0); }
};
Stored stored(bool trans, std::int64_t r, std::int64_t c, std::int64_t pad) {
  const std::int64_t rows = trans ? c : r, cols = trans ? r : c;
  return {rows, cols, std::max<std::int64_t>(cols + pad, 1)};
}

struct GemmShape {
  std::int64_t m, n, k, pad;
};

template <typename T>
void add_gemm_cases(std::vector<ParityCase>& cases) {
  struct Scalars {
    const char* name;
    double alpha, beta;
  };
  const Scalars scalars[] = {{"a1_b0", 1.0, 0.0}, {"a05_b2", 0.5, 2.0}, {"a0_bm1", 0.0, -1.0}};
  const GemmShape shapes[] = {{33, 47, 65, 0}, {64, 128, 96, 3}, {1, 10, 20, 0}, {17, 1, 9, 2}};
  int si = 0;
  for (const GemmShape& g : shapes) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      for (const Scalars& sc : scalars) {
        const std::string name = std::string("gemm_") + (ta ? "T" : "N") + (tb ? "T" : "N") + "_" + sc.name + "_shape" +
                                 std::to_string(si) + "_" + tname<T>();
        cases.push_back({name, [g, ta, tb, sc](Backend& ref, Backend& dut, std::mt19937_64& rng) {
                           const Stored sa = stored(ta, g.m, g.k, g.pad), sb = stored(tb, g.k, g.n, g.pad);
                           const Stored scc = stored(false, g.m, g.n, g.pad);
                           const std::vector<T> A = random_vec<T>(rng, sa.size(), -1.0, 1.0);
                           const std::vector<T> B = random_vec<T>(rng, sb.size(), -1.0, 1.0);
                           const std::vector<T> C0 = random_vec<T>(rng, scc.size(), -1.0, 1.0);
                           std::vector<T> C = C0;
                           const T alpha = T(sc.alpha), beta = T(sc.beta);
                           kernels<T>(ref).gemm(ta, tb, g.m, g.n, g.k, alpha, A.data(), sa.ld, B.data(), sb.ld, beta,
                                                C.data(), scc.ld);
                           DutBuffer dA = to_dut(dut, A), dB = to_dut(dut, B), dC = to_dut(dut, C0);
                           kernels<T>(dut).gemm(ta, tb, g.m, g.n, g.k, alpha, dA.as<T>(), sa.ld, dB.as<T>(), sb.ld,
                                                beta, dC.as<T>(), scc.ld);
                           // The whole stored C, padding included: nothing outside the m x n block is written.
                           EXPECT_TRUE(all_close("C", C, from_dut<T>(dC, C.size()), tol_product<T>()));
                         }});
      }
    }
    ++si;
  }
}

template <typename T>
void add_gemm_bias_act_cases(std::vector<ParityCase>& cases) {
  const GemmShape shapes[] = {{128, 96, 200, 0}, {33, 47, 65, 5}, {5, 7, 0, 1}};  // the last: k = 0
  // Identity and every activation of the op table, fused by the GEMM library
  // or not (the cpu_epilogue / cuda_epilogue columns).
  for (const UnaryOpInfo& row : kUnaryOpTable) {
    if (row.op != UnaryOp::Identity && !row.activation) continue;
    const UnaryOp act = row.op;
    const T p = T(op_param(row));
    for (int with_bias = 0; with_bias < 2; ++with_bias) {
      for (int t = 0; t < 4; ++t) {
        const bool ta = t & 1, tb = t & 2;
        for (int si = 0; si < 3; ++si) {
          if (si == 2 && t != 0) continue;  // the empty product once per activation is enough
          const GemmShape g = shapes[si];
          const std::string name = std::string("gemm_bias_act_") + row.name +
                                   (with_bias ? "_bias_" : "_nobias_") + (ta ? "T" : "N") + (tb ? "T" : "N") +
                                   "_shape" + std::to_string(si) + "_" + tname<T>();
          cases.push_back(
              {name, [g, ta, tb, act, p, with_bias](Backend& ref, Backend& dut, std::mt19937_64& rng) {
                 const Stored sa = stored(ta, g.m, g.k, g.pad), sb = stored(tb, g.k, g.n, g.pad);
                 const Stored scc = stored(false, g.m, g.n, g.pad);
                 const std::vector<T> A = random_vec<T>(rng, std::max<std::size_t>(sa.size(), 1), -1.0, 1.0);
                 const std::vector<T> B = random_vec<T>(rng, std::max<std::size_t>(sb.size(), 1), -1.0, 1.0);
                 const std::vector<T> bias = random_vec<T>(rng, g.n, -1.0, 1.0);
                 // C starts as garbage: the product overwrites it (beta = 0).
                 const std::vector<T> C0 = random_vec<T>(rng, scc.size(), 100.0, 200.0);
                 std::vector<T> C = C0;
                 kernels<T>(ref).gemm_bias_act(ta, tb, g.m, g.n, g.k, A.data(), sa.ld, B.data(), sb.ld,
                                               with_bias ? bias.data() : nullptr, act, p, C.data(), scc.ld);
                 DutBuffer dA = to_dut(dut, A), dB = to_dut(dut, B), dbias = to_dut(dut, bias), dC = to_dut(dut, C0);
                 kernels<T>(dut).gemm_bias_act(ta, tb, g.m, g.n, g.k, dA.as<T>(), sa.ld, dB.as<T>(), sb.ld,
                                               with_bias ? dbias.as<T>() : nullptr, act, p, dC.as<T>(), scc.ld);
                 EXPECT_TRUE(all_close("C", C, from_dut<T>(dC, C.size()), tol_product<T>()));
               }});
        }
      }
    }
  }
}

struct ReduceShape {
  std::int64_t outer, axis, inner;
};
// Covers every kernel: few outputs over a long axis (split over several
// blocks, then combined), rows (one block per output), many or wide outputs
// (one thread per output), plus a length-1 and an empty axis.
const ReduceShape kReduceShapes[] = {{1, 100000, 1}, {3, 70000, 1},  {2, 40000, 3}, {64, 300, 1}, {3, 7, 5},
                                     {8, 50, 64},    {1000, 20, 10}, {2, 1, 33},    {4, 0, 3}};

template <typename T>
void add_reduce_cases(std::vector<ParityCase>& cases) {
  int si = 0;
  for (const ReduceShape& s : kReduceShapes) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min}) {
      const std::string name =
          std::string("reduce_") + op_name(op) + "_shape" + std::to_string(si) + "_" + tname<T>();
      cases.push_back({name, [s, op](Backend& ref, Backend& dut, std::mt19937_64& rng) {
                         const std::size_t n = s.outer * s.axis * s.inner, no = s.outer * s.inner;
                         const std::vector<T> x = random_vec<T>(rng, n, -3.0, 3.0);
                         std::vector<T> y(no);
                         kernels<T>(ref).reduce(op, x.data(), y.data(), s.outer, s.axis, s.inner);
                         DutBuffer dx = to_dut(dut, x), dy(dut, no * sizeof(T));
                         kernels<T>(dut).reduce(op, dx.as<T>(), dy.as<T>(), s.outer, s.axis, s.inner);
                         const std::vector<T> got = from_dut<T>(dy, no);
                         if (op == ReduceOp::Max || op == ReduceOp::Min)
                           EXPECT_TRUE(all_equal("y", y, got));
                         else
                           EXPECT_TRUE(all_close("y", y, got, tol_sum<T>()));
                       }});
    }
    if (s.axis > 0) {
      cases.push_back({"argmax_shape" + std::to_string(si) + "_" + tname<T>(),
                       [s](Backend& ref, Backend& dut, std::mt19937_64& rng) {
                         const std::size_t n = s.outer * s.axis * s.inner, no = s.outer * s.inner;
                         std::vector<T> x = random_vec<T>(rng, n, -3.0, 3.0);
                         // A tie for the maximum in the first output: the first index must win.
                         if (s.axis >= 3) x[2 * s.inner] = x[(s.axis - 1) * s.inner] = T(10);
                         std::vector<std::int64_t> idx(no);
                         kernels<T>(ref).argmax(x.data(), idx.data(), s.outer, s.axis, s.inner);
                         DutBuffer dx = to_dut(dut, x), di(dut, no * sizeof(std::int64_t));
                         kernels<T>(dut).argmax(dx.as<T>(), di.as<std::int64_t>(), s.outer, s.axis, s.inner);
                         EXPECT_TRUE(all_equal("idx", idx, from_dut<std::int64_t>(di, no)));
                       }});
    }
    ++si;
  }
}

template <typename T>
void add_softmax_cases(std::vector<ParityCase>& cases) {
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{64, 10}, {7, 1000}, {3, 5000}, {1, 1}, {300, 129}};
  int si = 0;
  for (auto [rows, cols] : shapes) {
    for (bool log : {false, true}) {
      const std::string base =
          std::string(log ? "log_softmax" : "softmax") + "_shape" + std::to_string(si) + "_" + tname<T>();
      cases.push_back({base, [rows, cols, log](Backend& ref, Backend& dut, std::mt19937_64& rng) {
                         const std::size_t n = rows * cols;
                         const std::vector<T> x = random_vec<T>(rng, n, -8.0, 8.0);
                         std::vector<T> y(n);
                         kernels<T>(ref).softmax(x.data(), y.data(), rows, cols, log);
                         DutBuffer dx = to_dut(dut, x), dy(dut, n * sizeof(T));
                         kernels<T>(dut).softmax(dx.as<T>(), dy.as<T>(), rows, cols, log);
                         EXPECT_TRUE(all_close("y", y, from_dut<T>(dy, n), tol_elementwise<T>()));
                         kernels<T>(dut).softmax(dx.as<T>(), dx.as<T>(), rows, cols, log);  // y aliases x
                         EXPECT_TRUE(all_close("y in place", y, from_dut<T>(dx, n), tol_elementwise<T>()));
                       }});
      cases.push_back({base + "_backward", [rows, cols, log](Backend& ref, Backend& dut, std::mt19937_64& rng) {
                         const std::size_t n = rows * cols;
                         const std::vector<T> x = random_vec<T>(rng, n, -8.0, 8.0),
                                              g = random_vec<T>(rng, n, -1.0, 1.0);
                         std::vector<T> y(n), dx(n);
                         kernels<T>(ref).softmax(x.data(), y.data(), rows, cols, log);
                         kernels<T>(ref).softmax_backward(y.data(), g.data(), dx.data(), rows, cols, log);
                         DutBuffer dy = to_dut(dut, y), dg = to_dut(dut, g), ddx(dut, n * sizeof(T));
                         kernels<T>(dut).softmax_backward(dy.as<T>(), dg.as<T>(), ddx.as<T>(), rows, cols, log);
                         EXPECT_TRUE(all_close("dx", dx, from_dut<T>(ddx, n), tol_elementwise<T>()));
                       }});
    }
    ++si;
  }
}

template <typename T>
void add_permute_cases(std::vector<ParityCase>& cases) {
  struct Perm {
    const char* name;
    std::vector<std::int64_t> shape;
    std::vector<int> perm;
  };
  const Perm perms[] = {{"transpose", {37, 53}, {1, 0}},
                        {"nchw_to_nhwc", {2, 3, 5, 7}, {0, 2, 3, 1}},
                        {"identity", {4, 5, 6}, {0, 1, 2}},
                        {"unit_axis", {4, 1, 6}, {2, 1, 0}},
                        {"rank5", {2, 3, 4, 5, 3}, {4, 2, 0, 3, 1}},
                        {"merge_adjacent", {6, 4, 5}, {1, 2, 0}}};
  for (const Perm& pm : perms) {
    cases.push_back(
        {std::string("permute_") + pm.name + "_" + tname<T>(), [pm](Backend& ref, Backend& dut, std::mt19937_64& rng) {
           const std::size_t n = numel(pm.shape);
           const int nd = static_cast<int>(pm.shape.size());
           const std::vector<T> x = random_vec<T>(rng, n, -1.0, 1.0);
           std::vector<T> y(n);
           kernels<T>(ref).permute(x.data(), y.data(), nd, pm.shape.data(), pm.perm.data());
           DutBuffer dx = to_dut(dut, x), dy(dut, n * sizeof(T));
           kernels<T>(dut).permute(dx.as<T>(), dy.as<T>(), nd, pm.shape.data(), pm.perm.data());
           EXPECT_TRUE(all_equal("y", y, from_dut<T>(dy, n)));
         }});
  }
}

// Same seed, same numbers: uniform bit for bit; normal within a few ulps
// (device and host libm may differ in the last bit of log and cos).
template <typename T>
void add_random_cases(std::vector<ParityCase>& cases) {
  cases.push_back({std::string("fill_uniform_") + tname<T>(), [](Backend& ref, Backend& dut, std::mt19937_64&) {
                     const std::size_t n = 65539;
                     for (std::uint64_t stream : {0ull, 17ull}) {
                       std::vector<T> x(n);
                       kernels<T>(ref).fill_uniform(x.data(), n, T(-0.5), T(1.5), 42, stream);
                       DutBuffer dx(dut, n * sizeof(T));
                       kernels<T>(dut).fill_uniform(dx.as<T>(), n, T(-0.5), T(1.5), 42, stream);
                       EXPECT_TRUE(all_equal("x", x, from_dut<T>(dx, n))) << "stream " << stream;
                     }
                   }});
  cases.push_back({std::string("fill_normal_") + tname<T>(), [](Backend& ref, Backend& dut, std::mt19937_64&) {
                     const std::size_t n = 65539;
                     std::vector<T> x(n);
                     kernels<T>(ref).fill_normal(x.data(), n, T(1), T(0.25), 7, 3);
                     DutBuffer dx(dut, n * sizeof(T));
                     kernels<T>(dut).fill_normal(dx.as<T>(), n, T(1), T(0.25), 7, 3);
                     const double ulp = std::numeric_limits<T>::epsilon();
                     EXPECT_TRUE(all_close("x", x, from_dut<T>(dx, n), Tol{4 * ulp, 4 * ulp}));
                   }});
}

// Conversions are bit-exact: both backends round to nearest even with the
// same code (core/half.h). The inputs include the awkward values: the largest
// half, values that round to infinity, subnormals, ties, NaN, -0.
template <typename S, typename D>
void add_convert_case(std::vector<ParityCase>& cases, const char* sname, const char* dname) {
  cases.push_back(
      {std::string("convert_") + sname + "_to_" + dname, [](Backend& ref, Backend& dut, std::mt19937_64& rng) {
         std::vector<double> values = {0.0,
                                       -0.0,
                                       1.0,
                                       -2.5,
                                       65504.0,
                                       65520.0,
                                       1e-8,
                                       -3e-6,
                                       6.1e-5,
                                       1.0009765625,
                                       3.0e38,
                                       1e-40,
                                       1.00048828125,
                                       std::numeric_limits<double>::infinity(),
                                       -std::numeric_limits<double>::infinity(),
                                       std::numeric_limits<double>::quiet_NaN()};
         std::uniform_real_distribution<double> u(-70000.0, 70000.0), small(-1e-4, 1e-4);
         for (int i = 0; i < 5000; ++i) values.push_back(u(rng));
         for (int i = 0; i < 5000; ++i) values.push_back(small(rng));
         std::vector<S> src(values.size());
         for (std::size_t i = 0; i < values.size(); ++i) src[i] = static_cast<S>(values[i]);
         const std::size_t n = src.size();
         std::vector<D> dst(n);
         ref.convert(dtype_v<S>, src.data(), dtype_v<D>, dst.data(), static_cast<std::int64_t>(n));
         DutBuffer ds = to_dut(dut, src), dd(dut, n * sizeof(D));
         dut.convert(dtype_v<S>, ds.as<S>(), dtype_v<D>, dd.as<D>(), static_cast<std::int64_t>(n));
         EXPECT_TRUE(all_equal("dst", dst, from_dut<D>(dd, n)));
       }});
}

void add_convert_cases(std::vector<ParityCase>& cases) {
  add_convert_case<float, half>(cases, "f32", "f16");
  add_convert_case<float, bfloat16>(cases, "f32", "bf16");
  add_convert_case<half, float>(cases, "f16", "f32");
  add_convert_case<bfloat16, float>(cases, "bf16", "f32");
  add_convert_case<double, half>(cases, "f64", "f16");
  add_convert_case<double, bfloat16>(cases, "f64", "bf16");
  add_convert_case<half, double>(cases, "f16", "f64");
  add_convert_case<half, bfloat16>(cases, "f16", "bf16");
  add_convert_case<bfloat16, half>(cases, "bf16", "f16");
  add_convert_case<float, double>(cases, "f32", "f64");
  add_convert_case<double, float>(cases, "f64", "f32");
  add_convert_case<float, float>(cases, "f32", "f32");
}

std::vector<ParityCase> all_cases() {
  std::vector<ParityCase> c;
  auto add_for = [&c](auto tag) {
    using T = decltype(tag);
    add_unary_cases<T>(c);
    add_binary_cases<T>(c);
    add_blas1_cases<T>(c);
    add_gemm_cases<T>(c);
    add_gemm_bias_act_cases<T>(c);
    add_reduce_cases<T>(c);
    add_softmax_cases<T>(c);
    add_permute_cases<T>(c);
    add_random_cases<T>(c);
  };
  add_for(float{});
  add_for(double{});
  add_convert_cases(c);
  return c;
}

class Parity : public ::testing::TestWithParam<ParityCase> {};

TEST_P(Parity, MatchesCpu) {
  const ParityCase& c = GetParam();
  const char* filter = std::getenv("MAGMADNN_PARITY_FILTER");
  if (filter && c.name.find(filter) == std::string::npos)
    GTEST_SKIP() << "not selected by MAGMADNN_PARITY_FILTER=" << filter;
  Backend* dut = nullptr;
  if (dut_is_cpu()) {
    dut = &cpu_backend();
  } else {
    MAGMADNN_REQUIRE_GPU();
    dut = &cuda_backend();
  }
  // Inputs depend on the case only, so a failure repeats exactly.
  std::mt19937_64 rng(std::hash<std::string>{}(c.name));
  c.run(cpu_backend(), *dut, rng);
}

INSTANTIATE_TEST_SUITE_P(Kernels, Parity, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<ParityCase>& info) { return info.param.name; });

// Every case has a distinct, gtest-safe name, and the table covers every op.
TEST(ParityTable, NamesAreUniqueAndEveryOpIsCovered) {
  const std::vector<ParityCase> cases = all_cases();
  std::set<std::string> names;
  for (const auto& c : cases) EXPECT_TRUE(names.insert(c.name).second) << "duplicate case " << c.name;
  auto has = [&](const std::string& s) {
    for (const auto& n : names)
      if (n.find(s) != std::string::npos) return true;
    return false;
  };
  for (const UnaryOpInfo& row : kUnaryOpTable) {
    EXPECT_TRUE(has(std::string("unary_") + row.name + "_f32")) << row.name;
    EXPECT_TRUE(has(std::string("unary_backward_") + row.name + "_f64")) << row.name;
    if (row.activation) EXPECT_TRUE(has(std::string("gemm_bias_act_") + row.name + "_bias_")) << row.name;
  }
  for (const char* s : {"binary_add",
                        "binary_sub",
                        "binary_product",
                        "binary_div",
                        "binary_pow",
                        "binary_max",
                        "binary_min",
                        "gemm_NN",
                        "gemm_TN",
                        "gemm_NT",
                        "gemm_TT",
                        "reduce_sum",
                        "reduce_mean",
                        "reduce_max",
                        "reduce_min",
                        "argmax",
                        "log_softmax",
                        "softmax_shape0_f32_backward",
                        "permute_",
                        "fill_uniform",
                        "fill_normal",
                        "convert_f32_to_f16",
                        "convert_bf16_to_f32",
                        "fill_copy_axpy"})
    EXPECT_TRUE(has(s)) << s;
}

}  // namespace
