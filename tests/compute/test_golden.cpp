// Golden end-to-end check: a small MLP's loss and every gradient match
// PyTorch's (tests/golden/make_golden_mlp.py, values in mlp_golden.txt)
// within 1e-6 relative, in double.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>

#include "magmadnn/compute/compute.h"

using namespace magmadnn;

namespace {
std::map<std::string, std::vector<double>> load_golden() {
  std::ifstream in(std::string(MAGMADNN_GOLDEN_DIR) + "/mlp_golden.txt");
  std::map<std::string, std::vector<double>> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name;
    std::size_t n = 0;
    ls >> name >> n;
    std::vector<double> v(n);
    for (auto& x : v) ls >> x;
    out[name] = v;
  }
  return out;
}

// The same closed-form values as the script.
Tensor<double> make(const Shape& s, const std::function<double(int, int)>& f) {
  const int rows = int(s[0]), cols = s.ndim() == 2 ? int(s[1]) : 1;
  std::vector<double> v;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) v.push_back(f(i, j));
  return Tensor<double>::from_vector(s, v, HOST);
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(std::abs(got[i] - want[i]), 1e-6 * std::abs(want[i]) + 1e-12)
        << what << "[" << i << "]: " << got[i] << " vs PyTorch " << want[i];
  }
}

void check_mlp(bool fused_linear) {
  const auto golden = load_golden();
  ASSERT_TRUE(golden.count("loss")) << "missing " << MAGMADNN_GOLDEN_DIR << "/mlp_golden.txt";
  Tensor<double> xt = make({4, 5}, [](int i, int j) { return std::sin(0.37 * i + 0.11 * j + 0.1); });
  Tensor<double> w1t = make({7, 5}, [](int i, int j) { return 0.5 * std::sin(0.37 * i + 0.11 * j + 1.0); });
  Tensor<double> b1t = make({7}, [](int i, int) { return 0.1 * std::cos(0.5 * i); });
  Tensor<double> w2t = make({3, 7}, [](int i, int j) { return 0.5 * std::sin(0.23 * i - 0.19 * j + 2.0); });
  Tensor<double> b2t = make({3}, [](int i, int) { return 0.1 * std::sin(0.7 * i); });
  Tensor<double> yt({4, 3}, {ZERO, {}}, HOST);
  for (int i = 0; i < 4; ++i) yt.set({i, i % 3}, 1.0);

  auto X = op::var("X", &xt);
  auto W1 = op::var("W1", &w1t);
  auto b1 = op::var("b1", &b1t);
  auto W2 = op::var("W2", &w2t);
  auto b2 = op::var("b2", &b2t);
  auto Y = op::constant("Y", yt);
  op::Expr<double> h, z;
  if (fused_linear) {
    h = op::sigmoid(op::linear(X, W1, b1));
    z = op::linear(h, W2, b2);
  } else {
    h = op::sigmoid(op::add(op::matmul(X, W1, false, true), b1));
    z = op::add(op::matmul(h, W2, false, true), b2);
  }
  auto loss = op::softmax_crossentropy(z, Y);
  auto g = op::gradients(loss, {X, W1, b1, W2, b2});

  expect_close(loss->eval()->to_vector(), golden.at("loss"), "loss");
  expect_close(g.get(X)->to_vector(), golden.at("grad_X"), "dX");
  expect_close(g.get(W1)->to_vector(), golden.at("grad_W1"), "dW1");
  expect_close(g.get(b1)->to_vector(), golden.at("grad_b1"), "db1");
  expect_close(g.get(W2)->to_vector(), golden.at("grad_W2"), "dW2");
  expect_close(g.get(b2)->to_vector(), golden.at("grad_b2"), "db2");

  // The unfused composition log_softmax + crossentropy-style sum agrees too.
  auto loss2 = op::negative(op::scalarproduct(0.25, op::reduce_sum(op::product(Y, op::log_softmax(z)))));
  expect_close(loss2->eval()->to_vector(), golden.at("loss"), "composed loss");
}
}  // namespace

TEST(Golden, MlpMatchesPyTorchWithLinear) { check_mlp(true); }
TEST(Golden, MlpMatchesPyTorchWithMatmulAdd) { check_mlp(false); }
