#include "magmadnn/run/presets.h"

namespace magmadnn::run {
namespace {

Json mlp(int hidden) {
  if (hidden == 0) hidden = 1;
  if (hidden < 0) throw ConfigError("--layers", "expected a positive integer, got " + std::to_string(hidden));
  Json layers = Json::array();
  layers.push_back({{"type", "flatten"}});
  for (int i = 0; i < hidden; ++i) layers.push_back({{"type", "dense"}, {"units", 528}, {"activation", "sigmoid"}});
  layers.push_back({{"type", "dense"}, {"units", 10}, {"activation", "softmax"}});
  Json j;
  j["name"] = "mlp";
  j["layers"] = std::move(layers);
  j["loss"] = "cross_entropy";
  j["optimizer"] = {{"type", "sgd"}, {"learning_rate", 0.05}, {"weight_decay", 0.001}};
  j["epochs"] = 5;
  j["batch_size"] = 100;
  j["seed"] = 42;
  return j;
}

// LeNet-5 as usually modernised: ReLU instead of tanh, max instead of average
// pooling, "same" padding on the first convolution so 28x28 inputs keep the
// original 32x32 geometry (16 x 5 x 5 features before the dense layers).
Json lenet5() {
  Json j;
  j["name"] = "lenet5";
  j["layers"] = Json::array({
      {{"type", "conv2d"}, {"filters", 6}, {"kernel", {5, 5}}, {"padding", {2, 2}}, {"activation", "relu"}},
      {{"type", "pool"}, {"mode", "max"}, {"kernel", {2, 2}}, {"stride", {2, 2}}},
      {{"type", "conv2d"}, {"filters", 16}, {"kernel", {5, 5}}, {"activation", "relu"}},
      {{"type", "pool"}, {"mode", "max"}, {"kernel", {2, 2}}, {"stride", {2, 2}}},
      {{"type", "flatten"}},
      {{"type", "dense"}, {"units", 120}, {"activation", "relu"}},
      {{"type", "dense"}, {"units", 84}, {"activation", "relu"}},
      {{"type", "dense"}, {"units", 10}, {"activation", "softmax"}},
  });
  j["loss"] = "cross_entropy";
  // Cosine annealing to 0 over the 3 epochs: +0.5 to 1 point of test accuracy
  // over a constant rate (measured: 89.3% vs 88.4% at lr 0.02, batch 32).
  j["optimizer"] = {{"type", "sgd"}, {"learning_rate", 0.05}, {"momentum", 0.9}};
  j["schedule"] = {{"type", "cosine"}};
  j["epochs"] = 3;
  j["batch_size"] = 64;
  j["seed"] = 42;
  return j;
}

// A small residual network (ResNet-8: a 3x3 stem and one basic block per
// stage, 16, 32 and 64 channels, the last two halving H and W) with batch
// normalisation and global average pooling, for 28x28 Fashion-MNIST: the
// second convolutional workload beside LeNet-5, and the one with the shapes
// of modern networks (3x3 kernels, many channels, 1x1 projections).
Json resnet() {
  Json j;
  j["name"] = "resnet";
  j["layers"] = Json::array({
      {{"type", "conv2d"}, {"filters", 16}, {"kernel", {3, 3}}, {"padding", {1, 1}}, {"bias", false}},
      {{"type", "batchnorm"}},
      {{"type", "activation"}, {"function", "relu"}},
      {{"type", "residual"}, {"filters", 16}},
      {{"type", "residual"}, {"filters", 32}, {"stride", {2, 2}}},
      {{"type", "residual"}, {"filters", 64}, {"stride", {2, 2}}},
      {{"type", "global_pool"}, {"mode", "average"}},
      {{"type", "flatten"}},
      {{"type", "dense"}, {"units", 10}, {"activation", "softmax"}},
  });
  j["loss"] = "cross_entropy";
  j["optimizer"] = {{"type", "sgd"}, {"learning_rate", 0.1}, {"momentum", 0.9}};
  j["schedule"] = {{"type", "cosine"}};
  j["epochs"] = 2;
  j["batch_size"] = 128;
  j["seed"] = 42;
  return j;
}

}  // namespace

std::vector<std::string> preset_names() { return {"mlp", "lenet5", "resnet"}; }

Json preset(const std::string& name, int hidden_layers) {
  if (name == "mlp") return mlp(hidden_layers);
  if (name == "lenet5") return lenet5();
  if (name == "resnet") return resnet();
  std::string names;
  for (const auto& n : preset_names()) names += (names.empty() ? "" : ", ") + n;
  throw ConfigError("--preset", "unknown preset \"" + name + "\" (available: " + names + ")");
}

}  // namespace magmadnn::run
