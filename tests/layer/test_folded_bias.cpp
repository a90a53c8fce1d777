// The dense layer with its bias folded into the weight matrix
// (SHM-Learn-Dist §4, layer::BiasForm::folded): the seed's two realignments,
// equality with the separate bias (forward and every gradient), gradchecks in
// double, the fused activation, and the refusals.
#include <gtest/gtest.h>

#include <vector>

#include "layer_gradcheck.h"
#include "magmadnn/compute/compute.h"
#include "magmadnn/core/random.h"
#include "magmadnn/tensor/math.h"

using namespace magmadnn;
using magmadnn::testing::layer_gradcheck;
using magmadnn::testing::random_tensor;

namespace {

// A variable holding t (sharing its storage).
op::Var<double> var_of(const std::string& name, Tensor<double> t) { return op::var<double>(name, &t); }

// The separate layer's W and b written into the folded layer's [b | W].
void copy_into_folded(const layer::FullyConnectedLayer<double>& sep, layer::FullyConnectedLayer<double>& fold) {
  const std::vector<double> w = sep.get_weight()->value().to_vector(), b = sep.get_bias()->value().to_vector();
  const std::int64_t units = sep.units(), in = sep.get_weight()->value().shape()[1];
  std::vector<double> wb;
  for (std::int64_t i = 0; i < units; ++i) {
    wb.push_back(b[i]);
    wb.insert(wb.end(), w.begin() + i * in, w.begin() + (i + 1) * in);
  }
  fold.get_folded()->set_value(Tensor<double>::from_vector({units, in + 1}, wb, HOST));
}

void expect_near(const std::vector<double>& a, const std::vector<double>& b, double tol, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << what << " element " << i;
}

}  // namespace

// Fig. 4.2.1 and 4.3.1 of the seed: [a0 a1; a2 a3] <-> [1 a0 a1; 1 a2 a3].
TEST(FoldedBias, ShiftRightAndShiftLeftAreTheSeedsRealignments) {
  const auto a = Tensor<float>::from_vector({2, 2}, {10, 11, 12, 13}, HOST);
  Tensor<float> r({2, 3}, HOST);
  math::shift_right(a, 1.0f, r);
  EXPECT_EQ(r.to_vector(), (std::vector<float>{1, 10, 11, 1, 12, 13}));
  Tensor<float> l({2, 2}, HOST);
  math::shift_left(r, l);
  EXPECT_EQ(l.to_vector(), a.to_vector());
  // Large enough for the threaded pass.
  const auto big = random_tensor<double>({300, 257}, 7);
  Tensor<double> bigr({300, 258}, HOST), back({300, 257}, HOST);
  math::shift_right(big, 0.5, bigr);
  math::shift_left(bigr, back);
  EXPECT_EQ(back.to_vector(), big.to_vector());
  EXPECT_EQ(bigr.get({299, 0}), 0.5);
  Tensor<float> wrong({2, 2}, HOST);
  EXPECT_THROW(math::shift_right(a, 1.0f, wrong), ShapeError);
  EXPECT_THROW(math::shift_left(r, r), ShapeError);
}

// dx's product reads Wb in place without its first column: the product
// with ShiftLeft(Wb), to rounding.
TEST(FoldedBias, MatmulDropFirstColIsTheProductWithShiftLeft) {
  const auto a = random_tensor<double>({3, 4}, 20), b = random_tensor<double>({4, 6}, 21);
  Tensor<double> left({4, 5}, HOST), got({3, 5}, HOST);
  math::shift_left(b, left);
  math::matmul_drop_first_col(a, b, got);
  expect_near(got.to_vector(), math::matmul(a, left).to_vector(), 1e-14, "product");
  Tensor<double> wrong({3, 6}, HOST);
  EXPECT_THROW(math::matmul_drop_first_col(a, b, wrong), ShapeError);
}

// From one seed the folded layer starts as the separate one: W drawn the
// same, a zero bias column.
TEST(FoldedBias, InitialValuesAreTheSeparateLayers) {
  auto x = op::var<float>("x", {4, 6}, {UNIFORM, {-1.0f, 1.0f}}, HOST);
  set_seed(5);
  auto sep = layer::fullyconnected<float>(op::Expr<float>(x), 3, layer::BiasForm::separate);
  set_seed(5);
  auto fold = layer::fullyconnected<float>(op::Expr<float>(x), 3, layer::BiasForm::folded);
  ASSERT_TRUE(fold->bias_folded() && fold->has_bias());
  EXPECT_FALSE(fold->get_weight());
  EXPECT_FALSE(fold->get_bias());
  ASSERT_EQ(fold->get_weights().size(), 1u);
  EXPECT_EQ(fold->get_folded()->value().shape(), Shape({3, 7}));
  EXPECT_EQ(fold->named_weights()[0].first, fold->get_name() + "/Wb");
  EXPECT_EQ(fold->num_params(), sep->num_params());
  const auto [w, b] = fold->unfolded();
  EXPECT_EQ(w.to_vector(), sep->get_weight()->value().to_vector());
  EXPECT_EQ(b.to_vector(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(fold->out()->kind(), "folded_linear");
}

// [x, 1]-style folding computes the separate layer's output and gradients
// (with respect to x, W and b: dWb = [db | dW]), in double to rounding.
TEST(FoldedBias, ForwardAndGradientsEqualTheSeparateBias) {
  auto x = var_of("x", random_tensor<double>({5, 7}, 3));
  auto sep = layer::fullyconnected<double>(op::Expr<double>(x), 4, layer::BiasForm::separate);
  auto fold = layer::fullyconnected<double>(op::Expr<double>(x), 4, layer::BiasForm::folded);
  sep->get_weight()->set_value(random_tensor<double>({4, 7}, 4));
  sep->get_bias()->set_value(random_tensor<double>({4}, 5));
  copy_into_folded(*sep, *fold);
  expect_near(fold->out()->eval()->to_vector(), sep->out()->eval()->to_vector(), 1e-12, "output");
  const auto r = op::constant<double>("R", random_tensor<double>({5, 4}, 6));
  auto gs = op::gradients(op::product(sep->out(), r), {op::Expr<double>(x), sep->get_weight(), sep->get_bias()});
  auto gf = op::gradients(op::product(fold->out(), r), {op::Expr<double>(x), fold->get_folded()});
  expect_near(gf.get(x)->to_vector(), gs.get(x)->to_vector(), 1e-12, "dx");
  const std::vector<double> dwb = gf.get(fold->get_folded())->to_vector();
  const std::vector<double> dw = gs.get(sep->get_weight())->to_vector();
  const std::vector<double> db = gs.get(sep->get_bias())->to_vector();
  for (std::int64_t i = 0; i < 4; ++i) {
    ASSERT_NEAR(dwb[i * 8], db[i], 1e-12) << "db " << i;
    for (std::int64_t j = 0; j < 7; ++j) ASSERT_NEAR(dwb[i * 8 + 1 + j], dw[i * 7 + j], 1e-12) << "dW " << i << "," << j;
  }
}

TEST(FoldedBias, LayerGradcheck) {
  using X = op::Expr<double>;
  EXPECT_TRUE(layer_gradcheck([](const X& x) { return layer::fullyconnected(x, 3, layer::BiasForm::folded); },
                              random_tensor<double>({4, 5}, 8)));
  // Flattened input, as a dense layer after a convolution.
  EXPECT_TRUE(layer_gradcheck([](const X& x) { return layer::fullyconnected(x, 2, layer::BiasForm::folded); },
                              random_tensor<double>({3, 2, 2, 2}, 9)));
}

// sigmoid(folded_linear) fuses into one node that applies the activation in
// the GEMM's pass, with the same values and gradients.
TEST(FoldedBias, TheFusionPassFoldsTheActivationInAndGradchecks) {
  auto x = var_of("x", random_tensor<double>({3, 4}, 10));
  auto wb = var_of("wb", random_tensor<double>({2, 5}, 11));
  auto plain = op::sigmoid(op::folded_linear(x, wb));
  const std::vector<double> want = plain->eval()->to_vector();
  auto fused = op::fuse_linear_activation(plain);
  EXPECT_EQ(fused->kind(), "folded_linear_sigmoid");
  expect_near(fused->eval()->to_vector(), want, 1e-14, "fused output");
  EXPECT_TRUE(magmadnn::testing::gradcheck<double>(
      [](const auto& v) { return op::fuse_linear_activation(op::tanh(op::folded_linear(v[0], v[1]))); },
      {random_tensor<double>({3, 4}, 12), random_tensor<double>({2, 5}, 13)}));
}

TEST(FoldedBias, RefusesAWeightWithoutTheBiasColumn) {
  auto x = var_of("x", random_tensor<double>({3, 4}, 14));
  auto w = var_of("w", random_tensor<double>({2, 4}, 15));
  try {
    op::folded_linear(x, w)->eval();
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("{out, in + 1}"), std::string::npos) << e.what();
  }
  EXPECT_THROW(op::FoldedLinearNode<double>(x.ptr(), w.ptr(), UnaryOp::Exp), NotSupportedError);
}
