// The graph ops conv2d and pooling: gradcheck in double through every
// algorithm, the tensor-level entry points, and their shape errors.
#include <gtest/gtest.h>

#include "magmadnn/conv/chooser.h"
#include "magmadnn/conv/conv.h"
#include "support/gradcheck.h"
#include "support/shapes.h"

using namespace magmadnn;
using magmadnn::testing::gradcheck;
using magmadnn::testing::random_tensor;
using test::conv_geometry;

namespace {
using V = std::vector<op::Var<double>>;
}  // namespace

class ConvGradcheck : public ::testing::TestWithParam<conv::Algo> {};

TEST_P(ConvGradcheck, WithBias3x3) {
  const conv::Algo algo = GetParam();
  if (algo != conv::Algo::Auto && !conv::find_algorithm<double>(algo, DeviceKind::CPU)) GTEST_SKIP() << "not in this build";
  auto x = random_tensor<double>({2, 3, 6, 5}, 1), w = random_tensor<double>({4, 3, 3, 3}, 2);
  auto b = random_tensor<double>({4}, 3);
  EXPECT_TRUE(gradcheck<double>([&](const V& v) { return op::conv2d(v[0], v[1], v[2], conv_geometry(1), algo); }, {x, w, b}));
  EXPECT_TRUE(gradcheck<double>([&](const V& v) { return op::conv2d(v[0], v[1], conv_geometry(0), algo); }, {x, w}));
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ConvGradcheck,
                         ::testing::Values(conv::Algo::Direct, conv::Algo::Im2colGemm, conv::Algo::WinogradF2x2,
                                           conv::Algo::WinogradF4x4, conv::Algo::FFT, conv::Algo::Sliding,
                                           conv::Algo::Auto),
                         [](const auto& info) { return std::string(conv::algo_name(info.param)); });

TEST(ConvGradcheck, StrideDilationGroups) {
  auto x = random_tensor<double>({2, 4, 9, 8}, 4), w = random_tensor<double>({6, 2, 3, 2}, 5);
  auto b = random_tensor<double>({6}, 6);
  for (conv::Algo a : {conv::Algo::Direct, conv::Algo::Im2colGemm}) {
    EXPECT_TRUE(gradcheck<double>([&](const V& v) { return op::conv2d(v[0], v[1], v[2], conv_geometry(1, 2, 1, 2), a); },
                                  {x, w, b}));
    EXPECT_TRUE(gradcheck<double>([&](const V& v) { return op::conv2d(v[0], v[1], v[2], conv_geometry(2, 1, 2, 2), a); },
                                  {x, w, b}));
  }
}

TEST(ConvGradcheck, LargeKernelFft) {
  if (!conv::find_algorithm<double>(conv::Algo::FFT, DeviceKind::CPU)) GTEST_SKIP() << "built without FFTW";
  auto x = random_tensor<double>({1, 2, 9, 10}, 7), w = random_tensor<double>({3, 2, 5, 5}, 8);
  EXPECT_TRUE(gradcheck<double>([&](const V& v) { return op::conv2d(v[0], v[1], conv_geometry(2), conv::Algo::FFT); }, {x, w}));
}

TEST(ConvGradcheck, ConvThenPoolChain) {
  auto x = random_tensor<double>({2, 2, 8, 8}, 9), w = random_tensor<double>({3, 2, 3, 3}, 10);
  conv::PoolParams p;  // 2x2 max, stride 2
  EXPECT_TRUE(gradcheck<double>(
      [&](const V& v) { return op::pooling(op::relu(op::conv2d(v[0], v[1], conv_geometry(1))), p); }, {x, w}));
}

TEST(ConvOps, V1SpellingsMatchTheNewOnes) {
  auto x = random_tensor<double>({1, 2, 7, 7}, 11), w = random_tensor<double>({3, 2, 3, 3}, 12);
  auto vx = op::var<double>("x", x.shape(), {NONE}, HOST);
  vx->set_value(x);
  auto vw = op::var<double>("w", w.shape(), {NONE}, HOST);
  vw->set_value(w);
  auto a = op::conv2dforward(vx, vw, 1, 0, 2, 1, 1, 1);
  conv::ConvParams g;
  g.pad_h = 1, g.stride_h = 2;
  auto b = op::conv2d(vx, vw, g);
  EXPECT_EQ(a->eval()->shape(), (Shape{1, 3, 4, 5}));
  EXPECT_EQ(a->eval()->to_vector(), b->eval()->to_vector());
  auto pa = op::pooling(vx, 3, 3, 1, 1, 2, 2, AVERAGE_POOL);
  EXPECT_EQ(pa->eval()->shape(), (Shape{1, 2, 4, 4}));
  EXPECT_EQ(pa->kind(), "average_pool");
  EXPECT_THROW(op::conv2dforward(vx, vw, 0, 0, 1, 1, 1, 1, false), NotSupportedError);
}

TEST(ConvOps, GraphShapeErrorsNameTheShapes) {
  auto vx = op::var<double>("x", {2, 3, 8, 8}, {ZERO}, HOST);
  auto vw = op::var<double>("w", {4, 2, 3, 3}, {ZERO}, HOST);
  auto vb = op::var<double>("b", {5}, {ZERO}, HOST);
  try {
    op::conv2d(vx, vw);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("{4, 2, 3, 3}"), std::string::npos) << e.what();
  }
  auto vw3 = op::var<double>("w3", {4, 3, 3, 3}, {ZERO}, HOST);
  EXPECT_THROW(op::conv2d(vx, vw3, vb), ShapeError);  // bias {5} for 4 filters
}

TEST(ConvTensorApi, ForwardBackwardShapesAndErrors) {
  auto x = random_tensor<float>({2, 3, 8, 8}, 13), w = random_tensor<float>({4, 3, 3, 3}, 14);
  auto b = random_tensor<float>({4}, 15);
  Tensor<float> y = conv::conv2d_forward(x, w, &b, conv_geometry(1));
  EXPECT_EQ(y.shape(), (Shape{2, 4, 8, 8}));
  EXPECT_EQ(y.get_memory_type(), HOST);
  Tensor<float> db;
  Tensor<float> dw = conv::conv2d_backward_filter(x, y, w.shape(), conv_geometry(1), conv::Algo::Auto, &db);
  EXPECT_EQ(dw.shape(), w.shape());
  EXPECT_EQ(db.shape(), (Shape{4}));
  EXPECT_EQ(conv::conv2d_backward_data(y, w, x.shape(), conv_geometry(1)).shape(), x.shape());
  auto bad_b = random_tensor<float>({3}, 16);
  EXPECT_THROW(conv::conv2d_forward(x, w, &bad_b, conv_geometry(1)), ShapeError);
  EXPECT_THROW(conv::conv2d_backward_data(x, w, x.shape(), conv_geometry(1)), ShapeError);  // dy must be {2,4,8,8}
  try {
    conv::conv2d_backward_filter(x, x, w.shape(), conv_geometry(1));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("{2, 4, 8, 8}"), std::string::npos) << e.what();
  }
}

TEST(ConvTensorApi, HalfOnTheHostIsRefusedWithTheReason) {
  // Half convolutions are cuDNN's (GPU only); on the host every pass says so
  // rather than "no algorithm supports".
  const Tensor<half> x = random_tensor<float>({1, 2, 6, 6}, 17).cast<half>();
  const Tensor<half> w = random_tensor<float>({3, 2, 3, 3}, 18).cast<half>();
  const Tensor<half> dy = random_tensor<float>({1, 3, 4, 4}, 19).cast<half>();
  auto expect_refused = [](auto&& call, const char* what) {
    try {
      call();
      ADD_FAILURE() << what << ": expected NotSupportedError";
    } catch (const NotSupportedError& e) {
      EXPECT_NE(std::string(e.what()).find("GPU only"), std::string::npos) << what << ": " << e.what();
    }
  };
  expect_refused([&] { conv::conv2d_forward<half>(x, w, nullptr); }, "forward");
  expect_refused([&] { conv::conv2d_backward_data(dy, w, x.shape()); }, "backward data");
  expect_refused([&] { conv::conv2d_backward_filter(x, dy, w.shape()); }, "backward filter");
  EXPECT_TRUE(conv::algorithms<half>(DeviceKind::CPU).empty());
}
