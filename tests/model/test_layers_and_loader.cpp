// The model with the built-in layers (layer/layers.h) and with the data
// loader's background path.
#include <atomic>
#include <chrono>

#include "magmadnn/layer/layers.h"
#include "model_test_util.h"

using namespace magmadnn;
using namespace mtest;

namespace {

template <typename T>
model::NeuralNetwork<T> builtin_mlp(std::int64_t dim, std::int64_t hidden, model::nn_params_t p,
                                    layer::activation_t act = layer::SIGMOID,
                                    optimizer::optimizer_t opt = optimizer::SGD, bool reset_names = true) {
  if (reset_names) layer::reset_layer_names();
  auto in = layer::input<T>({-1, dim});
  auto fc1 = layer::fullyconnected(in->out(), hidden);
  auto a1 = layer::activation(fc1->out(), act);
  auto fc2 = layer::fullyconnected(a1->out(), 2);
  auto a2 = layer::activation(fc2->out(), layer::SOFTMAX);
  auto out = layer::output(a2->out());
  std::vector<layer::Layer<T>*> layers = {in, fc1, a1, fc2, a2, out};
  model::NeuralNetwork<T> net(layers, optimizer::CROSS_ENTROPY, opt, p);
  for (auto* l : layers) delete l;  // the model keeps its own references
  return net;
}

bool graph_has_kind_prefix(const op::Expr<float>& root, const std::string& prefix) {
  for (auto* n : op::topological_order(root.get())) {
    if (n->kind().rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// Counts the samples it sees (and leaves them unchanged).
class CountingTransform : public data::Transform<float> {
 public:
  void apply(float*, const Shape&, data::SampleRng&) const override { ++calls; }
  mutable std::atomic<int> calls{0};
};

}  // namespace

TEST(ModelLayers, BuiltinMlpTrainsAndIsFused) {
  set_seed(10);
  Tensor<float> x, y;
  blobs<float>(300, 4, x, y, 1, 4.0);
  auto net = builtin_mlp<float>(4, 16, {20, 15, 0.5});
  net.fit(x, y);
  EXPECT_GT(net.evaluate(x, y).accuracy, 0.97);
  // fc + sigmoid became one fused linear node; fc2 feeds the softmax as a linear node
  EXPECT_TRUE(graph_has_kind_prefix(net.output(), "linear")) << net.output()->to_string();
  EXPECT_FALSE(graph_has_kind_prefix(net.output(), "matmul")) << net.output()->to_string();
  const std::string s = net.summary();
  EXPECT_NE(s.find("FullyConnected"), std::string::npos) << s;
  EXPECT_NE(s.find("Trainable params: " + std::to_string(4 * 16 + 16 + 16 * 2 + 2)), std::string::npos) << s;
}

TEST(ModelLayers, BuiltinCheckpointResumeIsBitIdentical) {
  const std::string dir = temp_dir("builtin");
  Tensor<float> x, y;
  blobs<float>(90, 4, x, y);
  set_seed(5);
  auto straight = builtin_mlp<float>(4, 8, {16, 2, 0.05}, layer::RELU, optimizer::RMSPROP);
  straight.fit(x, y);
  set_seed(5);
  auto first = builtin_mlp<float>(4, 8, {16, 2, 0.05}, layer::RELU, optimizer::RMSPROP);
  model::FitOptions<float> one;
  one.epochs = 1;
  first.fit(x, y, one);
  first.save(dir + "/b.ckpt");
  set_seed(6);
  auto resumed = builtin_mlp<float>(4, 8, {16, 2, 0.05}, layer::RELU, optimizer::RMSPROP);
  resumed.load(dir + "/b.ckpt");
  resumed.fit(x, y, one);
  EXPECT_EQ(weight_bytes(resumed), weight_bytes(straight));
  std::filesystem::remove_all(dir);
}

// Background workers serve the same batches as the inline path, so the
// weights agree bit for bit, and a resume may switch between them.
TEST(ModelLoader, WorkersMatchInlineBatches) {
  Tensor<float> x, y;
  blobs<float>(77, 4, x, y);
  auto run = [&](int workers) {
    set_seed(44);
    model::NeuralNetwork<float> net(mlp<float>(4, 6, 2, Act::Relu, 0.8), optimizer::CROSS_ENTROPY,
                                    optimizer::ADAM, {10, 3, 0.01});
    model::FitOptions<float> o;
    o.loader_workers = workers;
    net.fit(x, y, o);
    return weight_bytes(net);
  };
  const auto inline_w = run(0);
  EXPECT_EQ(run(2), inline_w);

  auto counter = std::make_shared<CountingTransform>();
  set_seed(44);
  model::NeuralNetwork<float> net(mlp<float>(4, 6, 2, Act::Relu, 0.8), optimizer::CROSS_ENTROPY, optimizer::ADAM,
                                  {10, 3, 0.01});
  model::FitOptions<float> o;
  o.augment.push_back(counter);  // an identity transform: the same training, through the loader
  net.fit(x, y, o);
  EXPECT_EQ(counter->calls.load(), 77 * 3);
  EXPECT_EQ(weight_bytes(net), inline_w);
}


// Checkpoint names follow the network's structure, so a second network of
// the same architecture in the same process (its layers get other default
// names: "fullyconnected_3" instead of "fullyconnected_1") and with renamed
// layers reads the first one's checkpoint, optimizer state included.
TEST(ModelLayers, CheckpointLoadsIntoTheSameArchitectureBuiltAgain) {
  set_seed(21);
  Tensor<float> x, y;
  blobs<float>(120, 4, x, y, 1, 4.0);
  auto a = builtin_mlp<float>(4, 8, {16, 2, 0.1}, layer::SIGMOID, optimizer::ADAM);
  a.fit(x, y);
  const std::string path = ::testing::TempDir() + "/structural_names.ckpt";
  a.save(path);

  set_seed(99);
  auto b = builtin_mlp<float>(4, 8, {16, 2, 0.1}, layer::SIGMOID, optimizer::ADAM, /*reset_names=*/false);
  b.layers()[1]->set_name("renamed");
  ASSERT_NE(a.layers()[1]->get_name(), b.layers()[1]->get_name());
  b.load(path);
  EXPECT_EQ(a.predict(x).to_vector(), b.predict(x).to_vector());
  // Training on from the loaded state matches the original bit for bit.
  a.fit(x, y);
  b.fit(x, y);
  EXPECT_EQ(a.predict(x).to_vector(), b.predict(x).to_vector());
}

// CROSS_ENTROPY on a network that ends in a FullyConnected layer treats the
// output as logits (PyTorch's convention) instead of taking log of raw scores.
TEST(ModelLayers, CrossEntropyOnRawOutputTreatsItAsLogits) {
  set_seed(5);
  Tensor<float> x, y;
  blobs<float>(200, 4, x, y, 1, 4.0);
  layer::reset_layer_names();
  auto in = layer::input<float>({-1, 4});
  auto fc1 = layer::fullyconnected(in->out(), 8);
  auto a1 = layer::activation(fc1->out(), layer::RELU);
  auto fc2 = layer::fullyconnected(a1->out(), 2);
  model::NeuralNetwork<float> net({in, fc1, a1, fc2}, optimizer::CROSS_ENTROPY, optimizer::SGD, {20, 10, 0.1});
  const auto hist = net.fit(x, y);
  for (const auto& r : hist) EXPECT_TRUE(std::isfinite(r.train_loss)) << "epoch " << r.epoch;
  EXPECT_GT(net.evaluate(x, y).accuracy, 0.95);
}
