// math::batchnorm_forward / batchnorm_backward: the CPU's fused kernels
// (one task per channel, sums in double) against the composition of
// elementwise ops and reductions that a backend without them runs, in float
// and double, training and inference, with and without the residual input
// and ReLU, on shapes whose rows end inside and outside a vector; a channel
// whose mean is far from zero; and the errors for bad arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "magmadnn/tensor/math.h"
#include "support/gradcheck.h"

using namespace magmadnn;
using magmadnn::testing::random_tensor;

namespace {

template <typename T>
::testing::AssertionResult near(const Tensor<T>& a, const Tensor<T>& b, double tol, const std::string& what) {
  if (a.shape() != b.shape()) return ::testing::AssertionFailure() << what << ": shapes differ";
  const auto va = a.to_vector(), vb = b.to_vector();
  double scale = 1e-30;
  for (auto v : vb) scale = std::max(scale, std::abs(static_cast<double>(v)));
  for (std::size_t i = 0; i < va.size(); ++i) {
    const double d = std::abs(static_cast<double>(va[i]) - static_cast<double>(vb[i]));
    if (!(d <= tol * scale)) {
      return ::testing::AssertionFailure() << what << " element " << i << ": " << va[i] << " vs " << vb[i]
                                           << " (largest magnitude " << scale << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

struct Case {
  Shape x;
  bool skip, relu, training;
};

template <typename T>
void check_case(const Case& c, double tol, double offset = 0.0) {
  SCOPED_TRACE(::testing::Message() << "x " << c.x << (c.skip ? " +skip" : "") << (c.relu ? " relu" : "")
                                    << (c.training ? " training" : " inference"));
  const std::int64_t ch = c.x[1];
  const Tensor<T> x = random_tensor<T>(c.x, 3, offset - 2.0, offset + 2.0);
  const Tensor<T> skip = random_tensor<T>(c.x, 4);
  const Tensor<T> gamma = random_tensor<T>({ch}, 5, 0.5, 1.5), beta = random_tensor<T>({ch}, 6);
  const Tensor<T> rmean = random_tensor<T>({ch}, 7), rvar = random_tensor<T>({ch}, 8, 0.5, 2.0);
  const Tensor<T> g = random_tensor<T>(c.x, 9);
  const Tensor<T>* s = c.skip ? &skip : nullptr;
  const Tensor<T>* rm = c.training ? nullptr : &rmean;
  const Tensor<T>* rv = c.training ? nullptr : &rvar;
  const T eps = T(1e-5);

  struct Out {
    Tensor<T> y, mean, var, invstd, dx, dskip, dgamma, dbeta;
  };
  auto run = [&](bool fused) {
    Out o{Tensor<T>(c.x, HOST), Tensor<T>({ch}, HOST), Tensor<T>({ch}, HOST), Tensor<T>({ch}, HOST),
          Tensor<T>(c.x, HOST), Tensor<T>(c.x, HOST), Tensor<T>({ch}, HOST), Tensor<T>({ch}, HOST)};
    if (fused) {
      math::batchnorm_forward<T>(x, gamma, beta, s, c.relu, eps, rm, rv, o.y, o.mean, o.var, o.invstd);
      math::batchnorm_backward<T>(x, c.relu ? &o.y : nullptr, g, gamma, o.mean, o.invstd, c.training, &o.dx,
                               c.skip ? &o.dskip : nullptr, o.dgamma, o.dbeta);
    } else {
      math::batchnorm_forward_composed<T>(x, gamma, beta, s, c.relu, eps, rm, rv, o.y, o.mean, o.var, o.invstd);
      math::batchnorm_backward_composed<T>(x, c.relu ? &o.y : nullptr, g, gamma, o.mean, o.invstd, c.training, &o.dx,
                                        c.skip ? &o.dskip : nullptr, o.dgamma, o.dbeta);
    }
    return o;
  };
  const Out f = run(true), r = run(false);
  EXPECT_TRUE(near(f.y, r.y, tol, "y"));
  EXPECT_TRUE(near(f.mean, r.mean, tol, "mean"));
  EXPECT_TRUE(near(f.var, r.var, tol, "var"));
  EXPECT_TRUE(near(f.invstd, r.invstd, tol, "invstd"));
  EXPECT_TRUE(near(f.dx, r.dx, tol, "dx"));
  if (c.skip) EXPECT_TRUE(near(f.dskip, r.dskip, tol, "dskip"));
  EXPECT_TRUE(near(f.dgamma, r.dgamma, tol, "dgamma"));
  EXPECT_TRUE(near(f.dbeta, r.dbeta, tol, "dbeta"));
  if (c.relu) {
    // The ReLU's mask really applies: some outputs are clipped to zero, and
    // the gradient passed to the residual input is zero exactly there.
    const auto y = f.y.to_vector();
    EXPECT_GT(std::count(y.begin(), y.end(), T(0)), 0);
    if (c.skip) {
      const auto ds = f.dskip.to_vector();
      for (std::size_t i = 0; i < y.size(); ++i) ASSERT_EQ(ds[i] == T(0), y[i] == T(0)) << "element " << i;
    }
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  // {N, C}; rows of 13 (a tail after one 8-lane block); 49 and 196, resnet's
  // 7x7 and 14x14 planes; a 1x1 plane.
  for (const Shape& s : {Shape{6, 5}, Shape{3, 4, 13}, Shape{4, 3, 7, 7}, Shape{2, 16, 14, 14}, Shape{5, 2, 1, 1}}) {
    for (bool skip : {false, true})
      for (bool relu : {false, true})
        for (bool training : {true, false}) out.push_back({s, skip, relu, training});
  }
  return out;
}

}  // namespace

TEST(MathBatchNorm, FusedKernelsMatchTheCompositionInDouble) {
  for (const Case& c : cases()) check_case<double>(c, 1e-12);
}

TEST(MathBatchNorm, FusedKernelsMatchTheCompositionInFloat) {
  for (const Case& c : cases()) check_case<float>(c, 2e-5);
}

// A channel centred at 1000 with a spread of 2: the fused kernel's shifted
// sums keep the variance (about 1.33) to float's precision, where a plain
// E[x^2] - E[x]^2 in float would lose it entirely.
TEST(MathBatchNorm, AFarFromZeroMeanKeepsTheVariance) {
  check_case<float>({Shape{8, 3, 10, 10}, false, false, true}, 1e-3, 1000.0);
  const Tensor<float> x = random_tensor<float>({8, 3, 10, 10}, 3, 998.0, 1002.0);
  Tensor<float> y({8, 3, 10, 10}, HOST), mean({3}, HOST), var({3}, HOST), inv({3}, HOST);
  const Tensor<float> one = Tensor<float>::from_vector({3}, {1, 1, 1}, HOST), zero({3}, {ZERO}, HOST);
  math::batchnorm_forward<float>(x, one, zero, nullptr, false, 1e-5f, nullptr, nullptr, y, mean, var, inv);
  const auto xv = x.to_vector();
  for (std::int64_t c = 0; c < 3; ++c) {
    double s = 0, q = 0;
    for (std::int64_t n = 0; n < 8; ++n)
      for (std::int64_t i = 0; i < 100; ++i) s += xv[static_cast<std::size_t>((n * 3 + c) * 100 + i)];
    const double m = s / 800;
    for (std::int64_t n = 0; n < 8; ++n)
      for (std::int64_t i = 0; i < 100; ++i) {
        const double d = xv[static_cast<std::size_t>((n * 3 + c) * 100 + i)] - m;
        q += d * d;
      }
    EXPECT_NEAR(mean.get(c), m, 1e-3);
    EXPECT_NEAR(var.get(c), q / 800, 1e-4 * q / 800) << "channel " << c;
  }
}

TEST(MathBatchNorm, BadArgumentsAreNamed) {
  const Tensor<float> x({4, 3, 5}, {ZERO}, HOST);
  Tensor<float> y({4, 3, 5}, HOST), c3({3}, HOST), c3b({3}, HOST), c3c({3}, HOST);
  const Tensor<float> gamma({3}, {ONE}, HOST), beta({3}, {ZERO}, HOST), wrong({4}, {ONE}, HOST);
  EXPECT_THROW(math::batchnorm_forward<float>(x, wrong, beta, nullptr, false, 1e-5f, nullptr, nullptr, y, c3, c3b, c3c),
               ShapeError);
  const Tensor<float> skip({4, 3, 1}, {ZERO}, HOST);
  EXPECT_THROW(math::batchnorm_forward<float>(x, gamma, beta, &skip, false, 1e-5f, nullptr, nullptr, y, c3, c3b, c3c),
               ShapeError);
  EXPECT_THROW(math::batchnorm_forward<float>(x, gamma, beta, nullptr, false, 1e-5f, &gamma, nullptr, y, c3, c3b, c3c),
               ValueError);
  const Tensor<float> none({0, 3, 5}, HOST);
  Tensor<float> ynone({0, 3, 5}, HOST);
  try {
    math::batchnorm_forward<float>(none, gamma, beta, nullptr, false, 1e-5f, nullptr, nullptr, ynone, c3, c3b, c3c);
    ADD_FAILURE() << "an empty batch has no statistics";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("at least one value per channel"), std::string::npos) << e.what();
  }
  Tensor<float> dx({4, 3, 6}, HOST), dg({3}, HOST), db({3}, HOST);
  EXPECT_THROW(math::batchnorm_backward<float>(x, nullptr, y, gamma, c3, c3c, true, &dx, nullptr, dg, db), ShapeError);
}
