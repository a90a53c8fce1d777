// The fused kernels of a bf16 linear layer's backward pass (CPU):
//  - math::unary_backward_low: the activation gradient written in bf16
//    (and the float bias gradient) in one pass, which must give the bits of
//    the float pass followed by a cast;
//  - math::gemm_update: the weight-gradient product consumed in row tiles
//    by the SGD update, against a double reference of the same bf16
//    operands within float accumulation's bound, with the update and the
//    weight's bf16 copy exactly axpby's and the cast's.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "magmadnn/tensor/math.h"
#include "support/gradcheck.h"
#include "support/rounding_bound.h"

using namespace magmadnn;
using magmadnn::testing::random_tensor;

namespace {

std::vector<std::uint32_t> float_bits(const Tensor<float>& t) {
  std::vector<std::uint32_t> out;
  for (float v : t.to_vector()) out.push_back(std::bit_cast<std::uint32_t>(v));
  return out;
}

std::vector<std::uint16_t> bf16_bits(const Tensor<bfloat16>& t) {
  std::vector<std::uint16_t> out;
  for (std::int64_t i = 0; i < t.size(); ++i) out.push_back(t.get(i).bits);
  return out;
}

struct Rows {
  std::int64_t rows, cols;
};
void PrintTo(const Rows& r, std::ostream* os) { *os << r.rows << "x" << r.cols; }

class Bf16ActivationGrad : public ::testing::TestWithParam<Rows> {};

TEST_P(Bf16ActivationGrad, IsTheCastOfTheFloatGradientAndTheSameBiasSum) {
  const Rows r = GetParam();
  const Shape s{r.rows, r.cols};
  for (UnaryOp op : {UnaryOp::Sigmoid, UnaryOp::Relu, UnaryOp::Tanh}) {
    SCOPED_TRACE(op_name(op));
    // y = f(z), as a layer's output; dy spans several binades so that the
    // rounding sees ties and carries.
    const Tensor<float> y = math::unary(op, random_tensor<float>(s, 5 + r.cols, -4.0, 4.0));
    const Tensor<float> dy = random_tensor<float>(s, 6 + r.rows, -50.0, 50.0);
    Tensor<float> dx(s, HOST), db({r.cols}, HOST);
    math::unary_backward_colsum(op, y, dy, dx, db);
    const Tensor<bfloat16> want = dx.cast<bfloat16>();

    Tensor<bfloat16> dx16(s, HOST);
    Tensor<float> db16({r.cols}, HOST);
    math::unary_backward_low(op, y, dy, dx16, &db16);
    EXPECT_EQ(bf16_bits(dx16), bf16_bits(want));
    EXPECT_EQ(float_bits(db16), float_bits(db));

    Tensor<bfloat16> no_bias(s, HOST);
    math::unary_backward_low(op, y, dy, no_bias, static_cast<Tensor<float>*>(nullptr));
    EXPECT_EQ(bf16_bits(no_bias), bf16_bits(want));
  }
}

// 100 x 528: the MLP's hidden layer, threaded, 17 column blocks with a
// partial last one; then one row, one column, and a matrix below the
// threading threshold.
INSTANTIATE_TEST_SUITE_P(Shapes, Bf16ActivationGrad,
                         ::testing::Values(Rows{100, 528}, Rows{1, 33}, Rows{7, 1}, Rows{3, 5}),
                         [](const auto& info) {
                           return std::to_string(info.param.rows) + "x" + std::to_string(info.param.cols);
                         });

TEST(Bf16ActivationGrad, RefusesMismatchedShapes) {
  const Tensor<float> y({4, 6}, HOST), dy({4, 6}, HOST);
  Tensor<bfloat16> dx({4, 5}, HOST);
  EXPECT_THROW(math::unary_backward_low(UnaryOp::Sigmoid, y, dy, dx, static_cast<Tensor<float>*>(nullptr)),
               ShapeError);
  Tensor<bfloat16> ok({4, 6}, HOST);
  Tensor<float> db({5}, HOST);
  EXPECT_THROW(math::unary_backward_low(UnaryOp::Sigmoid, y, dy, ok, &db), ShapeError);
}

struct UpdateCase {
  std::int64_t m, n, k;
  bool ta, tb;
};
void PrintTo(const UpdateCase& c, std::ostream* os) {
  *os << "m=" << c.m << " n=" << c.n << " k=" << c.k << (c.ta ? " A^T" : "") << (c.tb ? " B^T" : "");
}

class Bf16GemmUpdate : public ::testing::TestWithParam<UpdateCase> {};

TEST_P(Bf16GemmUpdate, AppliesTheProductWithinFloatAccumulationAndWritesTheCast) {
  const UpdateCase c = GetParam();
  const Shape sa = c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k};
  const Shape sb = c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n};
  const Tensor<bfloat16> a = random_tensor<float>(sa, 31 + c.m, -2.0, 2.0).cast<bfloat16>();
  const Tensor<bfloat16> b = random_tensor<float>(sb, 32 + c.n, -1.0, 1.0).cast<bfloat16>();
  const Tensor<float> w0 = random_tensor<float>({c.m, c.n}, 33 + c.k, -0.5, 0.5);

  // The product alone (alpha 1, beta 0) against the exact products of the
  // bf16 operands summed in double: float accumulation's worst case.
  Tensor<float> product = w0;
  ASSERT_TRUE(math::gemm_update(1.f, a, c.ta, b, c.tb, 0.f, product, static_cast<Tensor<bfloat16>*>(nullptr)));
  const Tensor<double> ad = a.cast<double>(), bd = b.cast<double>();
  const Tensor<double> ref = math::matmul(ad, bd, c.ta, c.tb);
  const Tensor<double> abs_sum = math::matmul(test::abs_of(ad), test::abs_of(bd), c.ta, c.tb);
  const std::vector<float> got = product.to_vector();
  const std::vector<double> want = ref.to_vector(), bound = abs_sum.to_vector();
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_LE(std::abs(got[i] - want[i]), test::gamma_f32(c.k) * bound[i] + 1e-30) << "element " << i;
  }

  // An SGD step: exactly axpby's update of w0 with that product, and the
  // copy exactly the cast of the new weights; without the copy, the same
  // weights.
  const float alpha = -0.05f, beta = 1.f - 0.05f * 1e-3f;
  Tensor<float> want_w = w0;
  math::axpby(alpha, product, beta, want_w);
  Tensor<float> w = w0, w_plain = w0;
  Tensor<bfloat16> w16({c.m, c.n}, HOST);
  ASSERT_TRUE(math::gemm_update(alpha, a, c.ta, b, c.tb, beta, w, &w16));
  ASSERT_TRUE(math::gemm_update(alpha, a, c.ta, b, c.tb, beta, w_plain, static_cast<Tensor<bfloat16>*>(nullptr)));
  EXPECT_EQ(float_bits(w), float_bits(want_w));
  EXPECT_EQ(float_bits(w_plain), float_bits(want_w));
  EXPECT_EQ(bf16_bits(w16), bf16_bits(w.cast<bfloat16>()));
}

// The MLP's two weight shapes as the linear layer calls it (dz^T x), the
// other transposes, row counts that do not split evenly over the threads,
// one row, and a product too small for several tiles.
INSTANTIATE_TEST_SUITE_P(Shapes, Bf16GemmUpdate,
                         ::testing::Values(UpdateCase{528, 784, 100, true, false},
                                           UpdateCase{528, 528, 100, true, false},
                                           UpdateCase{301, 77, 19, false, false}, UpdateCase{67, 129, 40, false, true},
                                           UpdateCase{45, 23, 9, true, true}, UpdateCase{1, 300, 50, true, false},
                                           UpdateCase{3, 4, 2, true, false}),
                         [](const auto& info) {
                           const UpdateCase& c = info.param;
                           return std::to_string(c.m) + "x" + std::to_string(c.n) + "_k" + std::to_string(c.k) +
                                  (c.ta ? "_T" : "_N") + (c.tb ? "T" : "N");
                         });

TEST(Bf16GemmUpdate, AnEmptyProductOnlyScalesTheWeights) {
  const Tensor<bfloat16> a({0, 6}, HOST), b({0, 4}, HOST);
  const Tensor<float> w0 = random_tensor<float>({6, 4}, 41);
  Tensor<float> w = w0, want = w0;
  Tensor<bfloat16> w16({6, 4}, HOST);
  ASSERT_TRUE(math::gemm_update(0.5f, a, true, b, false, 0.25f, w, &w16));
  math::unary(UnaryOp::Scale, want, want, 0.25f);
  EXPECT_EQ(float_bits(w), float_bits(want));
  EXPECT_EQ(bf16_bits(w16), bf16_bits(want.cast<bfloat16>()));
}

TEST(Bf16GemmUpdate, RefusesShapesThatDoNotFit) {
  const Tensor<bfloat16> a({10, 6}, HOST), b({10, 4}, HOST);
  Tensor<float> w({6, 5}, HOST);
  EXPECT_THROW(math::gemm_update(1.f, a, true, b, false, 0.f, w, static_cast<Tensor<bfloat16>*>(nullptr)), ShapeError);
  Tensor<float> ok({6, 4}, HOST);
  Tensor<bfloat16> copy({4, 6}, HOST);
  EXPECT_THROW(math::gemm_update(1.f, a, true, b, false, 0.f, ok, &copy), ShapeError);
}

}  // namespace
