// A user-defined layer used exactly like the built-in ones, and the check
// that docs/custom_layer.md shows this very code.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "custom_layer_example.h"
#include "layer_gradcheck.h"

using namespace magmadnn;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << "cannot open " << path;
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

}  // namespace

// The gradient check that ends docs/custom_layer.md (kept verbatim there).
TEST(CustomLayer, Gradcheck) {
  // d(output)/d(input) and d(output)/d(W, b, V, c), by central differences.
  EXPECT_TRUE(magmadnn::testing::layer_gradcheck(
      [](const op::Expr<double>& x) { return mylayers::gatedlinear(x, 3); },
      magmadnn::testing::random_tensor<double>({5, 4}, 1)));
}

TEST(CustomLayer, BehavesLikeBuiltIns) {
  layer::reset_layer_names();
  auto xb = op::var<float>("x_batch", {4, 6}, {UNIFORM, {-1.0f, 1.0f}}, HOST);
  auto input = layer::input<float>(xb);
  auto gl = mylayers::gatedlinear(input->out(), 5);
  auto act = layer::activation(gl->out(), layer::SOFTMAX);
  auto output = layer::output(act->out());
  std::vector<layer::Layer<float>*> layers = {input, gl, act, output};

  EXPECT_EQ(layers[1]->type_name(), "GatedLinear");
  EXPECT_EQ(layers[1]->get_name(), "gatedlinear_1");
  EXPECT_EQ(layers[1]->num_params(), 2 * (5 * 6 + 5));
  const auto named = layers[1]->named_weights();
  ASSERT_EQ(named.size(), 4u);
  EXPECT_EQ(named[0].first, "gatedlinear_1/W");
  EXPECT_EQ(named[3].first, "gatedlinear_1/c");
  EXPECT_EQ(named[1].second->output().shape(), Shape({5}));

  // Any batch size through the input's placeholder.
  input->placeholder()->set_value(Tensor<float>({9, 6}, {UNIFORM, {-1.0f, 1.0f}}, HOST));
  const Tensor<float>* y = layers.back()->out()->eval();
  EXPECT_EQ(y->shape(), Shape({9, 5}));
  for (std::int64_t r = 0; r < 9; ++r) {
    float s = 0;
    for (std::int64_t c = 0; c < 5; ++c) s += y->get({r, c});
    EXPECT_NEAR(s, 1.0f, 1e-5f);
  }

  // Trainable through the common optimizer interface.
  auto loss = op::reduce_sum(op::product(gl->out(), gl->out()));
  std::vector<op::Expr<float>> wrt(gl->get_weights().begin(), gl->get_weights().end());
  auto table = op::gradients(loss, wrt);
  for (const auto& w : gl->get_weights()) ASSERT_NE(table.get(w), nullptr);

  delete output;
  magmadnn_finalize();
  EXPECT_EQ(op::pinned_node_count(), 0u);
}

TEST(CustomLayer, DocShowsTheTestedCode) {
  const std::string doc = read_text(std::string(MAGMADNN_SOURCE_DIR) + "/docs/custom_layer.md");
  const std::string code = read_text(std::string(MAGMADNN_SOURCE_DIR) + "/tests/layer/custom_layer_example.h");
  ASSERT_FALSE(code.empty());
  EXPECT_NE(doc.find(code), std::string::npos)
      << "docs/custom_layer.md must contain tests/layer/custom_layer_example.h verbatim";
  // And the gradcheck section of the doc is the one in this file.
  const std::string self = read_text(std::string(MAGMADNN_SOURCE_DIR) + "/tests/layer/test_custom_layer.cpp");
  const auto begin = self.find("TEST(CustomLayer, Gradcheck)");
  const auto end = self.find("TEST(CustomLayer, BehavesLikeBuiltIns)");
  ASSERT_NE(begin, std::string::npos);
  std::string block = self.substr(begin, end - begin);
  while (!block.empty() && block.back() == '\n') block.pop_back();
  EXPECT_NE(doc.find(block), std::string::npos)
      << "docs/custom_layer.md must end with the gradcheck test of test_custom_layer.cpp, verbatim";
}
