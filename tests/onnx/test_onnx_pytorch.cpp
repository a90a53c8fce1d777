// Models exported from PyTorch 2.15 by torch.onnx.export (the files in
// tests/onnx/data, written by data/make_pytorch_models.py): an MLP
// 784-528-10 (sigmoid), LeNet-5 (ReLU, max pooling) and a small CNN that
// flattens by x.view(x.size(0), -1), and the last two as the new exporter
// (dynamo=True) writes them. Imported, they
// compute PyTorch's outputs for the stored rows (at ONNX Runtime's rtol
// 1e-3 / atol 1e-5, and within 1e-5 of the largest output) at the full batch and
// at a smaller one (the batch axis is free), and fine-tuned by plain SGD they
// follow PyTorch's own losses step by step (within 1e-5 relative).
// ResNet-18 (45 MB, not committed) is checked the same way when
// MAGMADNN_ONNX_PYTORCH_LARGE names the folder that
// `make_pytorch_models.py --resnet18 DIR` wrote; skipped otherwise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>

#include "magmadnn/onnx/onnx.h"

using namespace magmadnn;

namespace {

std::string sci(double v) {
  std::ostringstream s;
  s.precision(2);
  s << std::scientific << v;
  return s.str();
}

std::string data_dir(const std::string& model) {
  if (model != "pytorch_resnet18") return MAGMADNN_ONNX_PYTORCH_DATA;
  const char* large = std::getenv("MAGMADNN_ONNX_PYTORCH_LARGE");
  return large ? large : "";
}

Tensor<float> read(const std::string& model, const std::string& what) {
  return onnx::read_tensor_file(data_dir(model) + "/" + model + "_" + what + ".pb");
}

// The first n rows of x (a batch on axis 0).
Tensor<float> rows(const Tensor<float>& x, std::int64_t n) {
  std::vector<std::int64_t> dims = x.shape().dims();
  const std::int64_t per = x.size() / dims[0];
  dims[0] = n;
  Tensor<float> r(Shape(dims), {ZERO}, HOST);
  for (std::int64_t k = 0; k < n * per; ++k) r.mutable_host_data()[k] = x.host_data()[k];
  return r;
}

// got against PyTorch's want: ONNX Runtime's tolerance, and the largest
// difference relative to the largest output (recorded, and held to 1e-5).
void expect_close(const Tensor<float>& got, const Tensor<float>& want, std::int64_t n, const std::string& what) {
  const std::int64_t per = want.size() / want.shape().dims()[0];
  ASSERT_EQ(got.size(), n * per) << what;
  double diff = 0, scale = 0;
  for (std::int64_t k = 0; k < n * per; ++k) {
    const double g = got.host_data()[k], w = want.host_data()[k];
    ASSERT_NEAR(g, w, 1e-5 + 1e-3 * std::abs(w)) << what << " element " << k;
    diff = std::max(diff, std::abs(g - w));
    scale = std::max(scale, std::abs(w));
  }
  const double worst = diff / scale;
  EXPECT_LT(worst, 1e-5) << what;
  ::testing::Test::RecordProperty(what + "_worst_relative", sci(worst));
}

void expect_pytorch_outputs(const std::string& model) {
  const Tensor<float> x = read(model, "input"), want = read(model, "output");
  onnx::Imported g = onnx::import_model(data_dir(model) + "/" + model + ".onnx");
  ASSERT_EQ(g.inputs.size(), 1u);
  ASSERT_EQ(g.outputs.size(), 1u);
  for (std::int64_t n : {x.shape().dims()[0], std::int64_t{3}}) {
    g.inputs[0].second->set_value(rows(x, n));
    expect_close(*g.outputs[0].second->eval(), want, n, model + " batch " + std::to_string(n));
  }
}

// Full-batch SGD steps on the stored rows against the labels i % 10, as the
// generator trained the PyTorch model: the loss after each step is
// PyTorch's, and it falls.
void expect_pytorch_fine_tuning(const std::string& model, double learning_rate) {
  const Tensor<float> x = read(model, "input"), losses = read(model, "losses");
  const std::int64_t n = x.shape().dims()[0];
  Tensor<float> y(Shape{n, 10}, {ZERO}, HOST);
  for (std::int64_t i = 0; i < n; ++i) y.mutable_host_data()[i * 10 + i % 10] = 1.0f;
  model::nn_params_t p(static_cast<unsigned>(n), 1);
  p.learning_rate = learning_rate;
  p.shuffle = false;
  auto net = onnx::import_network(data_dir(model) + "/" + model + ".onnx", optimizer::CROSS_ENTROPY, optimizer::SGD, p);
  expect_close(net->predict(x), read(model, "output"), n, model + " predict");
  double previous = 1e30, worst = 0;
  for (std::int64_t step = 0; step < losses.size(); ++step) {
    if (step > 0) net->fit(x, y);
    const double loss = net->evaluate(x, y).loss, want = losses.host_data()[step];
    EXPECT_NEAR(loss, want, 1e-5 * want) << model << " after " << step << " steps";
    EXPECT_LT(loss, previous) << model << " after " << step << " steps";
    previous = loss;
    worst = std::max(worst, std::abs(loss - want) / want);
  }
  ::testing::Test::RecordProperty(model + "_loss_worst_relative", sci(worst));
}

}  // namespace

TEST(OnnxPyTorch, MlpComputesPyTorchsOutputs) { expect_pytorch_outputs("pytorch_mlp"); }
TEST(OnnxPyTorch, LeNet5ComputesPyTorchsOutputs) { expect_pytorch_outputs("pytorch_lenet5"); }
TEST(OnnxPyTorch, MlpFineTunesAsPyTorchDoes) { expect_pytorch_fine_tuning("pytorch_mlp", 0.1); }
TEST(OnnxPyTorch, LeNet5FineTunesAsPyTorchDoes) { expect_pytorch_fine_tuning("pytorch_lenet5", 0.1); }

// x.view(x.size(0), -1): Shape of the free batch axis, Gather, Unsqueeze,
// Concat and Reshape import as a flatten that keeps the batch axis free.
TEST(OnnxPyTorch, ViewFlattenComputesAndFineTunes) {
  expect_pytorch_outputs("pytorch_view_cnn");
  expect_pytorch_fine_tuning("pytorch_view_cnn", 0.1);
}

// The torch.export-based exporter (dynamo=True, opset 20, IR version 10),
// whose flatten is a Reshape to (-1, features).
TEST(OnnxPyTorch, NewExporterLeNet5AndViewCnn) {
  for (const char* model : {"pytorch_lenet5_dynamo", "pytorch_view_cnn_dynamo"}) {
    expect_pytorch_outputs(model);
    expect_pytorch_fine_tuning(model, 0.1);
  }
}

TEST(OnnxPyTorch, ResNet18WhenGiven) {
  if (data_dir("pytorch_resnet18").empty()) GTEST_SKIP() << "MAGMADNN_ONNX_PYTORCH_LARGE is not set";
  expect_pytorch_outputs("pytorch_resnet18");
  expect_pytorch_fine_tuning("pytorch_resnet18", 0.01);
}
