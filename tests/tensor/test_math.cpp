// tensor/math: shape and device checks, dispatch, and the compositions built
// on the kernels (reduce_to_shape, linear, transpose), on HOST and MANAGED
// memory. The kernels' numerics are covered by tests/backend.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "magmadnn/backend/unary_op_table.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/math.h"
#include "support/gpu.h"
#include "support/op_table.h"

using namespace magmadnn;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

template <typename T>
Tensor<T> random_tensor(const Shape& s, memory_t mem = HOST, double lo = -1, double hi = 1) {
  static std::mt19937_64 g(777);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(static_cast<std::size_t>(s.numel()));
  for (auto& x : v) x = static_cast<T>(u(g));
  return Tensor<T>::from_vector(s, v, mem);
}

template <typename T>
constexpr double kTol = std::is_same_v<T, float> ? 1e-5 : 1e-12;

template <typename T>
void expect_close(const Tensor<T>& got, const Tensor<T>& want, double mag = 1.0) {
  ASSERT_EQ(got.shape(), want.shape());
  const auto g = got.to_vector(), w = want.to_vector();
  for (std::size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(double(g[i]), double(w[i]), kTol<T> * mag * std::max(1.0, std::abs(double(w[i])))) << "at " << i;
  }
}

// Runs `f` and checks it throws E with every string of `parts` in its message.
template <typename E, typename F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    for (const auto& p : parts) EXPECT_THAT(std::string(e.what()), HasSubstr(p));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

template <typename T>
class MathTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(MathTest, Types);

// -- shape errors -----------------------------------------------------------------

TYPED_TEST(MathTest, ShapeErrorsNameEveryShapeAndTheFunction) {
  using T = TypeParam;
  Tensor<T> a({2, 3}, HOST), b({4}, HOST), c({2, 3}, HOST), out({3, 2}, HOST);
  expect_error<ShapeError>([&] { math::add(a, b); }, {"add", "{2, 3}", "{4}"});
  expect_error<ShapeError>([&] { math::add(a, c, out); }, {"add", "{2, 3}", "{3, 2}"});
  expect_error<ShapeError>([&] { math::product(a, b, c); }, {"product", "{2, 3}", "{4}"});
  Tensor<T> y({3}, HOST);
  expect_error<ShapeError>([&] { math::unary(UnaryOp::Exp, a, y); }, {"exp", "{2, 3}", "{3}"});
  expect_error<ShapeError>([&] { math::unary_backward(UnaryOp::Tanh, a, a, y, c); },
                           {"unary_backward", "{2, 3}", "{3}"});
  Tensor<T> m1({2, 5}, HOST), m2({4, 3}, HOST), mo({2, 3}, HOST);
  expect_error<ShapeError>([&] { math::matmul(T(1), m1, false, m2, false, T(0), mo); },
                           {"matmul", "{2, 5}", "{4, 3}"});
  Tensor<T> m3({5, 3}, HOST), bad_out({3, 3}, HOST);
  expect_error<ShapeError>([&] { math::matmul(T(1), m1, false, m3, false, T(0), bad_out); },
                           {"matmul", "{2, 5}", "{5, 3}", "{3, 3}"});
  expect_error<ShapeError>([&] { math::matmul(a, y); }, {"matmul", "{2, 3}", "{3}"});
  Tensor<T> x({8, 4}, HOST), w({6, 5}, HOST), bias({6}, HOST), lo({8, 6}, HOST);
  expect_error<ShapeError>([&] { math::linear(x, w, &bias, UnaryOp::Relu, T(0), lo); },
                           {"linear", "{8, 4}", "{6, 5}", "{6}", "{8, 6}"});
  Tensor<T> r({2, 2}, HOST);
  expect_error<ShapeError>([&] { math::reduce(ReduceOp::Sum, a, 1, r); }, {"sum", "{2, 3}", "{2, 2}"});
  Tensor<T> g({4, 5}, HOST), o({3}, HOST);
  expect_error<ShapeError>([&] { math::reduce_to_shape(g, o); }, {"reduce_to_shape", "{4, 5}", "{3}"});
  expect_error<ShapeError>([&] { math::softmax(a, out); }, {"softmax", "{2, 3}", "{3, 2}"});
  expect_error<ShapeError>([&] { math::softmax_backward(a, a, out); }, {"softmax_backward", "{2, 3}", "{3, 2}"});
  Tensor<T> p({3, 2, 4}, HOST);
  expect_error<ShapeError>([&] { math::permute(p, {2, 0, 1}, p); }, {"permute", "{3, 2, 4}", "{4, 3, 2}"});
  expect_error<ShapeError>([&] { math::permute(p, {1, 0}, p); }, {"permute", "{3, 2, 4}"});
  expect_error<ValueError>([&] { math::permute(p, {0, 0, 1}, p); }, {"permute", "{3, 2, 4}"});
  expect_error<ShapeError>([&] { math::transpose(y); }, {"transpose", "{3}"});
  expect_error<ShapeError>([&] { math::axpy(T(1), a, y); }, {"axpy", "{2, 3}", "{3}"});
  EXPECT_THROW(math::make_broadcast(Shape{2, 3}, Shape{3, 3}, Shape{2, 3}), ShapeError);
  EXPECT_THROW(math::reduce(ReduceOp::Sum, a, 2), IndexError);
}

TEST(Math, MixingHostAndDeviceIsADeviceError) {
  MAGMADNN_REQUIRE_GPU();
  Tensor<float> h({4}, HOST), d({4}, DEVICE), out({4}, HOST);
  EXPECT_THROW(math::add(h, d, out), DeviceError);
}

// -- elementwise ---------------------------------------------------------------------

TYPED_TEST(MathTest, BinaryBroadcastsAndAllocatesInTheFirstOperandsMemory) {
  using T = TypeParam;
  for (memory_t mem : {HOST, MANAGED}) {
    const auto a = random_tensor<T>({4, 1, 3}, mem), b = random_tensor<T>({5, 1}, mem);
    const auto out = math::sub(a, b);
    EXPECT_EQ(out.shape(), Shape({4, 5, 3}));
    EXPECT_EQ(out.get_memory_type(), mem);
    for (std::int64_t i = 0; i < 4; ++i)
      for (std::int64_t j = 0; j < 5; ++j)
        for (std::int64_t k = 0; k < 3; ++k)
          ASSERT_EQ(out.get({i, j, k}), T(a.get({i, 0, k}) - b.get({j, 0})));
    const auto desc = math::make_broadcast(a.shape(), b.shape(), out.shape());
    EXPECT_EQ(desc.ndim, 3);
    EXPECT_EQ(desc.a_strides[1], 0);
    EXPECT_EQ(desc.b_strides[0], 0);
    EXPECT_EQ(desc.b_strides[1], 1);
    EXPECT_EQ(desc.b_strides[2], 0);
  }
}

TYPED_TEST(MathTest, UnaryHelpersAndInPlace) {
  using T = TypeParam;
  auto x = random_tensor<T>({3, 7}, MANAGED, 0.5, 2.0);
  const auto e = math::exp(x), l = math::log(x), p = math::pow(x, T(2.5)), s = math::scale(x, T(3)),
             c = math::add_scalar(x, T(-1));
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const double v = x.get(i);
    ASSERT_NEAR(e.get(i), std::exp(v), kTol<T> * std::exp(v));
    ASSERT_NEAR(l.get(i), std::log(v), kTol<T>);
    ASSERT_NEAR(p.get(i), std::pow(v, 2.5), kTol<T> * std::pow(v, 2.5));
    ASSERT_NEAR(s.get(i), 3 * v, kTol<T> * 3 * v);
    ASSERT_NEAR(c.get(i), v - 1, kTol<T>);
  }
  auto y = x;
  math::unary(UnaryOp::Relu, math::scale(x, T(-1)), y);
  for (std::int64_t i = 0; i < x.size(); ++i) ASSERT_EQ(y.get(i), T(0));
  const auto x0 = x.to_vector();
  math::unary(UnaryOp::Square, x, x);  // y may be x
  for (std::int64_t i = 0; i < x.size(); ++i) ASSERT_EQ(x.get(i), T(x0[i] * x0[i]));

  auto z = random_tensor<T>({5}, HOST), w = random_tensor<T>({5}, HOST);
  const auto w0 = w.to_vector();
  math::axpy(T(2), z, w);
  for (std::int64_t i = 0; i < 5; ++i) ASSERT_NEAR(w.get(i), w0[i] + 2 * z.get(i), kTol<T> * 4);
  math::fill(w, T(3.5));
  for (std::int64_t i = 0; i < 5; ++i) ASSERT_EQ(w.get(i), T(3.5));
}

TYPED_TEST(MathTest, UnaryBackwardDispatches) {
  using T = TypeParam;
  const auto x = random_tensor<T>({4, 6}, HOST, -2, 2), dy = random_tensor<T>({4, 6}, HOST);
  const auto y = math::sigmoid(x);
  Tensor<T> dx({4, 6}, HOST);
  math::unary_backward(UnaryOp::Sigmoid, x, y, dy, dx);
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const double s = 1 / (1 + std::exp(-double(x.get(i))));
    ASSERT_NEAR(dx.get(i), dy.get(i) * s * (1 - s), kTol<T>);
  }
}

// -- matmul and linear ----------------------------------------------------------------

TYPED_TEST(MathTest, MatmulTransposesAndAlphaBeta) {
  using T = TypeParam;
  const auto a = random_tensor<T>({5, 7}, MANAGED), b = random_tensor<T>({3, 7}, MANAGED);
  const auto c = math::matmul(a, b, false, true);  // {5, 3}
  ASSERT_EQ(c.shape(), Shape({5, 3}));
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 3; ++j) {
      double r = 0;
      for (std::int64_t k = 0; k < 7; ++k) r += double(a.get({i, k})) * double(b.get({j, k}));
      ASSERT_NEAR(c.get({i, j}), r, kTol<T> * 7);
    }
  // out = 2 * a^T^T ... : (a^T)^T b^T again through trans_a on a transposed copy.
  const auto at = math::transpose(a);  // {7, 5}
  auto d = random_tensor<T>({5, 3}, MANAGED);
  const auto d0 = d;
  math::matmul(T(2), at, true, b, true, T(0.5), d);
  for (std::int64_t i = 0; i < 15; ++i) ASSERT_NEAR(d.get(i), 2 * c.get(i) + 0.5 * d0.get(i), kTol<T> * 20);
}

TYPED_TEST(MathTest, LinearEqualsMatmulPlusBiasPlusActivation) {
  using T = TypeParam;
  const auto x = random_tensor<T>({16, 24}, HOST), w = random_tensor<T>({10, 24}, HOST);
  const auto bias = random_tensor<T>({10}, HOST);
  // Identity and every activation of the op table; any other op is refused.
  for (const UnaryOpInfo& row : kUnaryOpTable) {
    const UnaryOp act = row.op;
    const T p = T(magmadnn::testing::op_param(row));
    if (act != UnaryOp::Identity && !row.activation) {
      Tensor<T> out({16, 10}, HOST);
      EXPECT_THROW(math::linear(x, w, &bias, act, p, out), ValueError) << row.name;
      continue;
    }
    for (bool with_bias : {false, true}) {
      SCOPED_TRACE(::testing::Message() << row.name << " bias " << with_bias);
      Tensor<T> out({16, 10}, HOST);
      math::linear(x, w, with_bias ? &bias : nullptr, act, p, out);
      auto ref = math::matmul(x, w, false, true);
      if (with_bias) ref = math::add(ref, bias);
      ref = math::unary(act, ref, p);
      expect_close(out, ref, 30);
    }
  }
}

// -- reductions ----------------------------------------------------------------------------

TYPED_TEST(MathTest, ReduceNegativeAxesAndKeepdims) {
  using T = TypeParam;
  const auto x = random_tensor<T>({3, 4, 5}, MANAGED);
  const auto s_last = math::sum(x, -1), s2 = math::sum(x, 2);
  EXPECT_EQ(s_last.shape(), Shape({3, 4}));
  expect_close(s_last, s2);
  const auto m = math::mean(x, -2, true);
  EXPECT_EQ(m.shape(), Shape({3, 1, 5}));
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t k = 0; k < 5; ++k) {
      double r = 0;
      for (std::int64_t j = 0; j < 4; ++j) r += x.get({i, j, k});
      ASSERT_NEAR(m.get({i, 0, k}), r / 4, kTol<T> * 4);
    }
  const auto mx = math::max(x, -3);
  EXPECT_EQ(mx.shape(), Shape({4, 5}));
  for (std::int64_t j = 0; j < 20; ++j)
    ASSERT_EQ(mx.get(j), std::max({x.get(j), x.get(20 + j), x.get(40 + j)}));

  double total = 0;
  for (std::int64_t i = 0; i < x.size(); ++i) total += x.get(i);
  EXPECT_NEAR(math::sum_all(x), total, kTol<T> * 60);

  const auto am = math::argmax(x, -1);
  EXPECT_EQ(am.shape(), Shape({3, 4}));
  EXPECT_EQ(am.get_memory_type(), MANAGED);
  for (std::int64_t r = 0; r < 12; ++r) {
    std::int64_t best = 0;
    for (std::int64_t k = 1; k < 5; ++k)
      if (x.get(r * 5 + k) > x.get(r * 5 + best)) best = k;
    ASSERT_EQ(am.get(r), best);
  }
  const auto ties = Tensor<T>::from_vector({2, 3}, {T(1), T(4), T(4), T(2), T(2), T(2)}, HOST);
  EXPECT_EQ(math::argmax(ties, 1).to_vector(), (std::vector<std::int64_t>{1, 0}));
}

TYPED_TEST(MathTest, ReduceToShapeOnBroadcastPatterns) {
  using T = TypeParam;
  const auto g = random_tensor<T>({4, 5, 6}, MANAGED);
  const std::vector<Shape> targets{{6}, {5, 1}, {1, 5, 1}, {4, 1, 6}, {1}, Shape(), {4, 5, 6},
                                   {5, 6}, {4, 1, 1}, {1, 1, 6}};
  for (const Shape& target : targets) {
    SCOPED_TRACE("target " + target.to_string());
    Tensor<T> out(target, MANAGED);
    math::reduce_to_shape(g, out);
    // Reference: add every g element into the out element it broadcasts from.
    const std::int64_t shift = 3 - target.ndim();
    std::vector<double> ref(static_cast<std::size_t>(target.numel()), 0.0);
    for (std::int64_t i = 0; i < 4; ++i)
      for (std::int64_t j = 0; j < 5; ++j)
        for (std::int64_t k = 0; k < 6; ++k) {
          const std::int64_t c[3] = {i, j, k};
          std::int64_t idx = 0;
          for (std::int64_t ax = 0; ax < target.ndim(); ++ax) {
            const std::int64_t d = target.dims()[ax];
            idx = idx * d + (d == 1 ? 0 : c[ax + shift]);
          }
          ref[idx] += g.get({i, j, k});
        }
    for (std::size_t q = 0; q < ref.size(); ++q) ASSERT_NEAR(out.get(std::int64_t(q)), ref[q], kTol<T> * 120);
  }
}

TYPED_TEST(MathTest, ReduceToShapeIsTheAdjointOfBroadcasting) {
  using T = TypeParam;
  // <broadcast(b), g> == <b, reduce_to_shape(g)> for any g.
  const auto b = random_tensor<T>({3, 1, 4}, HOST), g = random_tensor<T>({2, 3, 5, 4}, HOST);
  const auto zeros = Tensor<T>::from_vector({2, 3, 5, 4}, std::vector<T>(120, T(0)), HOST);
  const auto bb = math::add(zeros, b);
  Tensor<T> rg({3, 1, 4}, HOST);
  math::reduce_to_shape(g, rg);
  double lhs = 0, rhs = 0;
  for (std::int64_t i = 0; i < 120; ++i) lhs += double(bb.get(i)) * double(g.get(i));
  for (std::int64_t i = 0; i < 12; ++i) rhs += double(b.get(i)) * double(rg.get(i));
  EXPECT_NEAR(lhs, rhs, kTol<T> * 100);
}

// -- softmax and layout -------------------------------------------------------------------

TYPED_TEST(MathTest, SoftmaxOverTheLastAxis) {
  using T = TypeParam;
  const auto x = random_tensor<T>({2, 3, 4}, HOST, -1000, 1000);
  Tensor<T> y({2, 3, 4}, HOST), ly({2, 3, 4}, HOST), dx({2, 3, 4}, HOST);
  math::softmax(x, y);
  math::softmax(x, ly, true);
  for (std::int64_t r = 0; r < 6; ++r) {
    double s = 0;
    for (std::int64_t k = 0; k < 4; ++k) {
      s += y.get(r * 4 + k);
      ASSERT_TRUE(std::isfinite(ly.get(r * 4 + k)));
    }
    ASSERT_NEAR(s, 1.0, kTol<T> * 4);
  }
  const auto dy = random_tensor<T>({2, 3, 4}, HOST);
  math::softmax_backward(y, dy, dx);
  for (std::int64_t r = 0; r < 6; ++r) {
    double dot = 0;
    for (std::int64_t k = 0; k < 4; ++k) dot += double(dy.get(r * 4 + k)) * double(y.get(r * 4 + k));
    for (std::int64_t k = 0; k < 4; ++k) {
      const double want = double(y.get(r * 4 + k)) * (double(dy.get(r * 4 + k)) - dot);
      ASSERT_NEAR(dx.get(r * 4 + k), want, kTol<T> * 4);
    }
  }
}

TYPED_TEST(MathTest, PermuteAndTranspose) {
  using T = TypeParam;
  const auto x = random_tensor<T>({2, 3, 4}, MANAGED);
  Tensor<T> y({4, 2, 3}, MANAGED);
  math::permute(x, {-1, 0, 1}, y);  // negative axes
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j)
      for (std::int64_t k = 0; k < 4; ++k) ASSERT_EQ(y.get({k, i, j}), x.get({i, j, k}));
  const auto t = math::transpose(x);
  EXPECT_EQ(t.shape(), Shape({2, 4, 3}));
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j)
      for (std::int64_t k = 0; k < 4; ++k) ASSERT_EQ(t.get({i, k, j}), x.get({i, j, k}));
  const auto tt = math::transpose(t);
  EXPECT_EQ(tt.to_vector(), x.to_vector());
}

}  // namespace
