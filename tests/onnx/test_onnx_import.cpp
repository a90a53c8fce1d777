// Import for further training: an exported network comes back as a
// NeuralNetwork whose initializers are trainable weights, and trains.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "magmadnn/layer/layers.h"
#include "magmadnn/onnx/onnx.h"

namespace fs = std::filesystem;
using namespace magmadnn;
using LayerPtr = std::shared_ptr<layer::Layer<float>>;

TEST(OnnxImport, ImportedNetworkTrainsAndKeepsItsWeightsTrainable) {
  auto in = layer::input<float>(std::vector<std::int64_t>{-1, 1, 6, 6});
  auto conv = layer::conv2d<float>(in->out(), {3, 3}, 3, {1, 1});
  auto bn = layer::batchnorm<float>(conv->out());
  auto act = layer::activation<float>(bn->out(), layer::RELU);
  auto fl = layer::flatten<float>(act->out());
  auto fc = layer::fullyconnected<float>(fl->out(), 2);
  auto sm = layer::activation<float>(fc->out(), layer::SOFTMAX);
  std::vector<LayerPtr> layers{in.ptr(), conv.ptr(), bn.ptr(), act.ptr(), fl.ptr(), fc.ptr(), sm.ptr()};
  model::NeuralNetwork<float> net(layers, optimizer::CROSS_ENTROPY, optimizer::SGD, model::nn_params_t(8, 1));
  const fs::path path = fs::temp_directory_path() / ("magmadnn_onnx_train_" + std::to_string(::getpid()) + ".onnx");
  onnx::export_model(net, path.string());

  model::nn_params_t p(8, 3);
  p.learning_rate = 0.1;
  auto imported = onnx::import_network(path.string(), optimizer::CROSS_ENTROPY, optimizer::SGD, p);
  fs::remove(path);  // read: the temporary file has served
  EXPECT_EQ(imported->num_params(), net.num_params());  // W, b of conv and dense, gamma and beta
  EXPECT_EQ(imported->parameters().size(), net.parameters().size());

  // Two separable classes: the sign of the image's mean.
  const std::int64_t n = 64;
  Tensor<float> x(Shape{n, 1, 6, 6}, {UNIFORM, {-1.0f, 1.0f}}, HOST);
  Tensor<float> y(Shape{n, 2}, {ZERO}, HOST);
  for (std::int64_t i = 0; i < n; ++i) {
    float s = 0;
    for (int k = 0; k < 36; ++k) s += x.host_data()[i * 36 + k];
    y.mutable_host_data()[i * 2 + (s > 0 ? 1 : 0)] = 1.0f;
  }
  const model::Evaluation before = imported->evaluate(x, y);
  imported->fit(x, y);
  const model::Evaluation after = imported->evaluate(x, y);
  EXPECT_LT(after.loss, before.loss);
}

TEST(OnnxImport, SupportedOpsIncludeTheLayersOps) {
  const auto ops = magmadnn::onnx::supported_ops();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));  // the table is searched by bisection
  for (const char* op : {"Gemm", "MatMul", "Conv", "BatchNormalization", "Relu", "Sigmoid", "Tanh", "Softmax",
                         "MaxPool", "AveragePool", "GlobalAveragePool", "Flatten", "Reshape", "Add", "Concat",
                         "Dropout", "Identity"}) {
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  }
}
