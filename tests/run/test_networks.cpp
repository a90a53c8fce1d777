// Networks as graphs in the config (run/layer_kinds.h): names, inputs, add
// and concat, the refusals before training, the real-size presets'
// parameter counts and shapes, and the data of real shape (synthetic images,
// CIFAR binary files) reached from the run spec.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "magmadnn/io/cifar.h"
#include "magmadnn/layer/merge_layers.h"
#include "magmadnn/run/build_network.h"
#include "magmadnn/run/dataset.h"
#include "magmadnn/run/layer_kinds.h"
#include "magmadnn/run/presets.h"
#include "magmadnn/run/run_training.h"
#include "magmadnn/run/spec.h"
#include "magmadnn/tune/train_trial.h"
#include "support/gradcheck.h"

using namespace magmadnn;
using namespace magmadnn::run;
namespace fs = std::filesystem;

namespace {

// The first ```json block of docs/networks.md.
Json docs_example() {
  std::ifstream in(std::string(MAGMADNN_SOURCE_DIR) + "/docs/networks.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  const auto begin = s.find("```json\n");
  const auto end = s.find("```", begin + 8);
  EXPECT_NE(begin, std::string::npos);
  return Json::parse(s.substr(begin + 8, end - begin - 8));
}

std::string error_of(const Json& j) {
  try {
    parse_config(j);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

Json cv(std::int64_t filters, std::int64_t kernel = 3, std::int64_t stride = 1) {
  return {{"type", "conv2d"}, {"filters", filters}, {"kernel", kernel}, {"padding", kernel / 2}, {"stride", stride}};
}

// A config of `layers` ending in a 10-class head.
Json net(Json layers) {
  for (Json l : {Json{{"type", "global_pool"}}, Json{{"type", "flatten"}},
                 Json{{"type", "dense"}, {"units", 10}, {"activation", "softmax"}}})
    layers.push_back(l);
  return {{"layers", layers}};
}

std::string build_error(const Json& j, std::vector<std::int64_t> sample = {1, 28, 28}) {
  try {
    build_network(parse_config(j), sample, 1, 10);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

const layer::Layer<float>& layer_named(const NetworkBuild& b, const std::string& name) {
  for (const auto& l : b.model->layers()) {
    if (l->get_name() == name) return *l;
  }
  throw std::runtime_error("no layer " + name);
}

std::vector<std::int64_t> shape_of(const NetworkBuild& b, const std::string& name) {
  std::vector<std::int64_t> d = layer_named(b, name).get_output_shape().dims();
  d.erase(d.begin());
  return d;
}

NetworkBuild build_preset(const std::string& name) {
  const TrainSpec s = parse_config(preset(name));
  return build_network(s, s.layers[0].shape, 1, name == "alexnet-cifar" ? 10 : 1000);
}

}  // namespace

TEST(GraphConfig, TheDocsExampleParsesBuildsAndNamesItsLayers) {
  const TrainSpec s = parse_config(docs_example());
  ASSERT_EQ(s.layers[9].type, "add");
  EXPECT_EQ(s.layers[9].inputs, (std::vector<std::string>{"main", "stem"}));
  EXPECT_EQ(s.layers[9].activation, "relu");
  EXPECT_TRUE(is_graph_network(s.layers));
  EXPECT_EQ(layer_inputs(s.layers, 13), (std::vector<std::int64_t>{10, 11, 12}));
  EXPECT_EQ(layer_inputs(s.layers, 1), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(parse_config(to_json(s)), s);  // names and inputs survive the run folder's config
  const NetworkBuild b = build_network(s, {1, 28, 28}, 1, 10);
  EXPECT_EQ(shape_of(b, "mixed"), (std::vector<std::int64_t>{32, 28, 28}));
  EXPECT_EQ(shape_of(b, "block"), (std::vector<std::int64_t>{16, 28, 28}));
  EXPECT_EQ(layer_named(b, "mixed").type_name(), "Concat");
  EXPECT_EQ(b.classes, 10);
}

TEST(GraphConfig, AChainConfigReadsBackWithoutGraphKeys) {
  const Json j = to_json(parse_config(preset("lenet5")));
  for (const Json& l : j["layers"]) {
    EXPECT_FALSE(l.contains("name"));
    EXPECT_FALSE(l.contains("inputs"));
  }
  EXPECT_FALSE(is_graph_network(parse_config(j).layers));
}

TEST(GraphConfig, BadGraphsAreRefusedNamingTheLayer) {
  const Json relu = {{"type", "activation"}, {"function", "relu"}};
  auto named = [](Json l, const std::string& n, std::vector<std::string> in = {}) {
    l["name"] = n;
    if (!in.empty()) l["inputs"] = in;
    return l;
  };
  EXPECT_EQ(error_of(net({cv(4), named(cv(4), "x", {"nope"})})),
            R"(layers[1].inputs[0]: no layer is named "nope" ("input" is the network's input))");
  EXPECT_EQ(error_of(net({cv(4), named(cv(4), "a", {"b"}), named(relu, "b", {"a"})})),
            R"(layers[1].inputs[0]: "b" reads this layer: a cycle (layers[1] "a" -> layers[2] "b" -> layers[1] "a", each reading the next))");
  EXPECT_EQ(error_of(net({named(cv(4), "a", {"a"})})), R"(layers[0].inputs[0]: "a" is this layer itself: a cycle)");
  EXPECT_EQ(error_of(net({named(cv(4), "a", {"c"}), named(cv(4), "b", {"input"}), named(relu, "c")})),
            R"(layers[0].inputs[0]: "c" is layers[2], after this layer: list every layer after the layers it reads)");
  EXPECT_EQ(error_of(net({named(cv(4), "side"), named(cv(4), "main", {"input"})})),
            R"(layers[0]: layers[0] "side" is read by no layer (only the last layer, layers[4], is the network's output): name it in a later layer's "inputs", or remove it)");
  EXPECT_EQ(error_of(net({named(cv(4), "a"), named(cv(4), "a")})),
            R"(layers[1].name: "a" is also the name of layers[0] (names must differ))");
  EXPECT_EQ(error_of(net({cv(4), Json{{"type", "add"}}})),
            R"(layers[1].inputs: an add layer reads at least 2 inputs, got 1 (no "inputs": the layer before it))");
  EXPECT_EQ(error_of(net({named(cv(4), "a"), named(cv(4), "b", {"a", "input"})})),
            "layers[1].inputs: a conv2d layer reads 1 input, got 2");
  EXPECT_EQ(error_of(net({named(cv(4), "input")})),
            R"(layers[0].name: "input" names the network's input in "inputs"; choose another name)");
  EXPECT_EQ(error_of(net({cv(4), Json{{"type", "input"}}})),
            "layers[1].type: an input layer comes first in the list, or not at all");
  EXPECT_EQ(error_of(net({named(cv(4), "a b")})),
            R"(layers[0].name: expected 1 to 100 letters, digits, '-', '_' or '.', got "a b")");
  EXPECT_EQ(error_of(net({Json{{"type", "conv2d"}, {"filters", 4}, {"kernel", 3}, {"inputs", "x"}}})),
            R"(layers[0].inputs: expected a non-empty array of layer names, got "x")");
}

TEST(GraphBuild, ShapesThatDisagreeNameTheLayerAndBothInputs) {
  const Json a = {{"type", "conv2d"}, {"name", "a"}, {"filters", 8}, {"kernel", 3}, {"padding", 1}};
  Json b = {{"type", "conv2d"}, {"name", "b"}, {"inputs", {"input"}}, {"filters", 8}, {"kernel", 3},
            {"padding", 1}, {"stride", 2}};
  EXPECT_EQ(build_error(net({a, b, Json{{"type", "add"}, {"name", "sum"}, {"inputs", {"a", "b"}}}})),
            R"(layers[2]: input "b" is (N, 8, 14, 14) but input "a" is (N, 8, 28, 28) (an add needs equal shapes))");
  EXPECT_EQ(build_error(net({a, b, Json{{"type", "concat"}, {"inputs", {"a", "b"}}}})),
            R"(layers[2]: input "b" is (N, 8, 14, 14) but input "a" is (N, 8, 28, 28) (a concat needs equal sizes on every axis but the channels))");
  b["stride"] = 1;
  b["filters"] = 4;
  EXPECT_EQ(build_error(net({a, b, Json{{"type", "add"}, {"inputs", {"a", "b"}}}})),
            R"(layers[2]: input "b" is (N, 4, 28, 28) but input "a" is (N, 8, 28, 28) (an add needs equal shapes))");
  EXPECT_EQ(build_error(net({a, b, Json{{"type", "concat"}, {"inputs", {"a", "b"}}}})), "(no error)");
}

TEST(GraphBuild, AHybridPlanOnABranchingNetworkIsRefusedClearly) {
  Json j = docs_example();
  j["distributed"] = {{"parallel", "model"}};
  EXPECT_NE(error_of(j).find("distributed.parallel: layers[1] (conv2d) would be model-parallel, but hybrid plans serve "
                             "chains of layers only"),
            std::string::npos)
      << error_of(j);
  j["distributed"] = {{"parallel", "auto"}};  // the one dense layer is unpaired: plain data parallelism
  EXPECT_FALSE(plan_parallel(parse_config(j)).hybrid());
  EXPECT_FALSE(plan_parallel(parse_config(preset("resnet50"))).hybrid());
  Json alex = preset("alexnet");  // a chain: its hybrid plan stands
  alex["distributed"] = {{"parallel", "auto"}};
  EXPECT_TRUE(plan_parallel(parse_config(alex)).hybrid());
}

// add and concat as layers, in double: their gradients are the output's
// (add) and each input's own channels of it (concat).
TEST(GraphBuild, AddAndConcatLayersPassGradcheck) {
  using V = std::vector<op::Var<double>>;
  auto rnd = [](std::vector<std::int64_t> s, std::uint64_t seed) {
    return magmadnn::testing::random_tensor<double>(Shape(s), seed);
  };

  EXPECT_TRUE(magmadnn::testing::gradcheck<double>([](const V& v) { return layer::add<double>({v[0], v[1], v[2]})->out(); },
                                         {rnd({2, 3, 2, 2}, 1), rnd({2, 3, 2, 2}, 2), rnd({2, 3, 2, 2}, 3)}));
  EXPECT_TRUE(magmadnn::testing::gradcheck<double>([](const V& v) { return layer::concat<double>({v[0], v[1]})->out(); },
                                         {rnd({2, 3, 2, 2}, 4), rnd({2, 1, 2, 2}, 5)}));
  EXPECT_THROW(layer::concat<double>({op::var<double>("a", {2, 3, 2, 2}, {ZERO}, HOST),
                                      op::var<double>("b", {2, 3, 2, 3}, {ZERO}, HOST)}),
               ShapeError);
}

TEST(RealSizePresets, ResNet50HasTorchvisionsParametersAndShapes) {
  const NetworkBuild b = build_preset("resnet50");
  EXPECT_EQ(b.model->num_params(), 25'557'032);
  EXPECT_EQ(shape_of(b, "stem"), (std::vector<std::int64_t>{64, 56, 56}));
  EXPECT_EQ(shape_of(b, "layer1.2"), (std::vector<std::int64_t>{256, 56, 56}));
  EXPECT_EQ(shape_of(b, "layer2.3"), (std::vector<std::int64_t>{512, 28, 28}));
  EXPECT_EQ(shape_of(b, "layer3.5"), (std::vector<std::int64_t>{1024, 14, 14}));
  EXPECT_EQ(shape_of(b, "layer4.2"), (std::vector<std::int64_t>{2048, 7, 7}));
  // v1.5: the stride is on the 3x3, the first 1x1 keeps 56 x 56.
  EXPECT_EQ(shape_of(b, "layer2.0.conv1"), (std::vector<std::int64_t>{128, 56, 56}));
  EXPECT_EQ(b.classes, 1000);
}

// Each bottleneck's last normalisation starts with a zero scale, so every
// block starts as its shortcut (Goyal et al. 2017; torchvision's
// zero_init_residual). Without it the preset adapted to 28 x 28
// Fashion-MNIST did not learn (docs/notes/benchmarks-resnet.md, "ResNet-50
// and GoogLeNet on 28 x 28"); every other scale starts at 1.
TEST(RealSizePresets, ResNet50StartsEachBottleneckAsItsShortcut) {
  const NetworkBuild b = build_preset("resnet50");
  int zero = 0, one = 0, other = 0;
  for (const auto& l : b.model->layers()) {
    for (const auto& [name, var] : l->named_weights()) {
      if (name.size() < 6 || name.substr(name.size() - 6) != "/gamma") continue;
      const Tensor<float>& g = static_cast<const op::Variable<float>&>(*var).value();
      const bool bn3 = name.find(".bn3/") != std::string::npos;
      for (std::int64_t k = 0; k < g.size(); ++k) {
        if (bn3 && g.get(k) == 0.0f) ++zero;
        else if (!bn3 && g.get(k) == 1.0f) ++one;
        else ++other;
      }
    }
  }
  EXPECT_EQ(zero, 256 * 3 + 512 * 4 + 1024 * 6 + 2048 * 3);  // 4 x the width, per block
  EXPECT_GT(one, 0);
  EXPECT_EQ(other, 0);
}

TEST(GraphConfig, ABatchnormsGammaInitSetsItsScaleAndReadsBack) {
  Json j = net({cv(8), Json{{"type", "batchnorm"}, {"gamma_init", 0.25}}, Json{{"type", "batchnorm"}}});
  const TrainSpec s = parse_config(j);
  EXPECT_EQ(s.layers[1].gamma_init, 0.25);
  EXPECT_EQ(s.layers[2].gamma_init, 1.0);
  const Json back = to_json(s);
  EXPECT_EQ(back["layers"][1]["gamma_init"], 0.25);
  EXPECT_FALSE(back["layers"][2].contains("gamma_init"));  // the default is not written
  EXPECT_EQ(parse_config(back).layers[1].gamma_init, 0.25);
  const NetworkBuild b = build_network(s, {1, 28, 28}, 1, 10);
  std::vector<float> firsts;
  for (const auto& l : b.model->layers())
    for (const auto& [name, var] : l->named_weights())
      if (name.find("/gamma") != std::string::npos)
        firsts.push_back(static_cast<const op::Variable<float>&>(*var).value().get(0));
  EXPECT_EQ(firsts, (std::vector<float>{0.25f, 1.0f}));
  j["layers"][1]["gamma_init"] = -1;
  EXPECT_NE(error_of(j).find("layers[1].gamma_init"), std::string::npos) << error_of(j);
}

TEST(RealSizePresets, AlexNetInBothFormsHasThePublishedParameters) {
  const NetworkBuild big = build_preset("alexnet");
  EXPECT_EQ(big.model->num_params(), 61'100'840);
  EXPECT_EQ(big.classes, 1000);
  const NetworkBuild small = build_preset("alexnet-cifar");
  EXPECT_EQ(small.model->num_params(), 2'472'266);
  EXPECT_EQ(small.classes, 10);
  const Shape f = small.model->layers()[1]->get_output_shape();
  EXPECT_EQ(f, Shape({1, 64, 8, 8}));  // 11x11/4 with padding 5 on 32 x 32
  // The 224 form's features are 256 x 6 x 6 = 9216 before the classifier.
  bool saw_9216 = false;
  for (const auto& l : big.model->layers()) {
    if (l->type_name() == "Flatten") saw_9216 = l->get_output_shape() == Shape({1, 9216});
  }
  EXPECT_TRUE(saw_9216);
}

TEST(RealSizePresets, GoogLeNetHasTorchvisionsParametersAndInceptionShapes) {
  const NetworkBuild b = build_preset("googlenet");
  EXPECT_EQ(b.model->num_params(), 6'624'904);
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> want = {
      {"maxpool2", {192, 28, 28}},     {"inception3a", {256, 28, 28}}, {"inception3b", {480, 28, 28}},
      {"inception4a", {512, 14, 14}},  {"inception4d", {528, 14, 14}}, {"inception4e", {832, 14, 14}},
      {"inception5a", {832, 7, 7}},    {"inception5b", {1024, 7, 7}}};
  for (const auto& [name, shape] : want) EXPECT_EQ(shape_of(b, name), shape) << name;
  EXPECT_EQ(b.classes, 1000);
}

TEST(RealSizePresets, A224PresetFed28x28IsRefusedNamingTheInputLayer) {
  for (const char* name : {"resnet50", "googlenet", "alexnet"}) {
    EXPECT_EQ(build_error(preset(name), {1, 28, 28}).rfind(
                  "layers[0].shape: the network takes samples of [3,224,224], but the data's are [1,28,28]", 0),
              0u)
        << name;
  }
}

TEST(SyntheticData, IsSeededComputedPerBatchAndDiffersBetweenSplits) {
  DataSpec d;
  d.dataset = "synthetic";
  d.shape = {3, 8, 8};
  d.classes = 5;
  d.train_samples = 40;
  d.test_samples = 12;
  const Split a = load_data(d, "train", dataset_classes(d), 7), b = load_data(d, "train", 5, 7);
  const Split other = load_data(d, "train", 5, 8), test = load_data(d, "test", 5, 7);
  EXPECT_EQ(a.source, "synthetic");
  EXPECT_TRUE(a.x.is_generated());
  EXPECT_EQ(a.x.storage_bytes(), 0u);  // no memory for the images
  EXPECT_EQ(a.x.shape(), Shape({40, 3, 8, 8}));
  EXPECT_EQ(a.y.shape(), Shape({40, 5}));
  EXPECT_EQ(test.x.shape(), Shape({12, 3, 8, 8}));
  const Tensor<float> xa = a.x.to_tensor(), xb = b.x.to_tensor();
  EXPECT_EQ(xa.to_vector(), xb.to_vector());
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(xa.to_vector(), other.x.to_tensor().to_vector());
  const std::vector<float> all = xa.to_vector();
  EXPECT_NE(std::vector<float>(all.begin(), all.begin() + 192), test.x.to_tensor().slice(0, 1).to_vector());
  for (float v : all) ASSERT_TRUE(v >= 0.0f && v < 1.0f);
  std::vector<int> seen(5, 0);
  for (auto c : a.labels) ++seen.at(static_cast<std::size_t>(c));
  for (int n : seen) EXPECT_GT(n, 0);
  // take and slice read the same samples as the whole set.
  const Split part = subset(a, {5, 2, 39});
  EXPECT_EQ(part.x.to_tensor().slice(1, 2).to_vector(), xa.slice(2, 3).to_vector());
  EXPECT_EQ(part.x.slice(2, 3).to_tensor().to_vector(), xa.slice(39, 40).to_vector());
  d.limit_train = 10;
  EXPECT_EQ(load_data(d, "train", 5, 7).x.rows(), 10);
}

TEST(SyntheticData, ItsConfigKeysBelongToItAlone) {
  Json j = docs_example();
  j["data"] = {{"dataset", "synthetic"}, {"shape", {1, 28, 28}}, {"classes", 10}, {"train_samples", 64},
               {"test_samples", 16}};
  const TrainSpec s = parse_config(j);
  EXPECT_EQ(s.data.shape, (std::vector<std::int64_t>{1, 28, 28}));
  EXPECT_EQ(s.data.train_samples, 64);
  EXPECT_EQ(parse_config(to_json(s)), s);
  j["data"] = {{"dataset", "fashion-mnist"}, {"classes", 10}};
  EXPECT_EQ(error_of(j).rfind(R"(data.classes: only "dataset": "synthetic" takes it)", 0), 0u) << error_of(j);
  j["data"] = {{"dataset", "synthetic"}, {"shape", {3, 0, 2}}};
  EXPECT_EQ(error_of(j).rfind("data.shape: expected one sample's shape", 0), 0u) << error_of(j);
  j["data"] = {{"dataset", "cifar10"}};
  EXPECT_EQ(error_of(j).rfind("data.dir: missing (the folder of the cifar10 binary files", 0), 0u) << error_of(j);
  EXPECT_FALSE(to_json(parse_config(docs_example()))["data"].contains("shape"));  // written for synthetic only
}

// A graph network trains end to end on synthetic data, and the results say
// that the data was synthetic.
TEST(SyntheticData, AGraphNetworkTrainsOnItAndTheSummarySaysSynthetic) {
  Json j = docs_example();
  j["data"] = {{"dataset", "synthetic"}, {"shape", {1, 28, 28}}, {"classes", 10}, {"train_samples", 48},
               {"test_samples", 16}, {"val_split", 0}};
  j["epochs"] = 1;
  j["batch_size"] = 16;
  TrainingRun run(parse_config(j));
  const RunResult r = run.run();
  ASSERT_EQ(r.history.size(), 1u);
  EXPECT_TRUE(std::isfinite(r.history[0].train_loss));
  EXPECT_EQ(r.summary["dataset"], "synthetic");
  EXPECT_EQ(r.summary["synthetic_data"], true);
  EXPECT_EQ(r.summary["train_samples"], 48);
}

namespace {
// CIFAR binary files of n records each with labels i % classes.
void write_cifar(const fs::path& file, io::CifarKind kind, int n, int classes, unsigned seed) {
  io::CifarRecords r;
  r.count = n;
  r.pixels.resize(static_cast<std::size_t>(n * io::kCifarPixels));
  for (std::size_t i = 0; i < r.pixels.size(); ++i) r.pixels[i] = static_cast<std::uint8_t>((i * 31 + seed) % 256);
  for (int i = 0; i < n; ++i) {
    r.fine.push_back(static_cast<std::uint8_t>((i + static_cast<int>(seed)) % classes));
    if (kind == io::CifarKind::Cifar100) r.coarse.push_back(static_cast<std::uint8_t>(i % 20));
  }
  io::write_cifar_bin(file.string(), kind, r);
}

Json cifar_config(const std::string& dataset, const fs::path& dir, int classes) {
  return {{"layers",
           {cv(4, 3, 2), Json{{"type", "global_pool"}}, Json{{"type", "flatten"}},
            Json{{"type", "dense"}, {"units", classes}, {"activation", "softmax"}}}},
          {"data", {{"dataset", dataset}, {"dir", dir.string()}, {"val_split", 0}}},
          {"epochs", 1},
          {"batch_size", 4}};
}
}  // namespace

TEST(CifarData, Cifar10And100FilesTrainFromTheRunSpecAndATuneTrial) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("magmadnn_cifar_" + std::to_string(::getpid()));
  fs::create_directories(dir / "c10");
  fs::create_directories(dir / "c100");
  for (int k = 1; k <= 5; ++k) write_cifar(dir / "c10" / ("data_batch_" + std::to_string(k) + ".bin"), io::CifarKind::Cifar10, 2, 10, k);
  write_cifar(dir / "c10" / "test_batch.bin", io::CifarKind::Cifar10, 3, 10, 9);
  write_cifar(dir / "c100" / "train.bin", io::CifarKind::Cifar100, 6, 100, 1);
  write_cifar(dir / "c100" / "test.bin", io::CifarKind::Cifar100, 4, 100, 2);

  TrainingRun c10(parse_config(cifar_config("cifar10", dir / "c10", 10)));
  EXPECT_EQ(c10.train().x.shape(), Shape({10, 3, 32, 32}));
  EXPECT_EQ(c10.test().x.rows(), 3);
  EXPECT_STREQ(c10.train().x.storage_type(), "uint8");
  EXPECT_EQ(c10.classes(), 10);
  EXPECT_EQ(c10.train().labels[0], 1);  // batch 1's first record
  // Pixel bytes read as [0, 1] floats.
  EXPECT_FLOAT_EQ(c10.train().x.to_tensor().get({0, 0, 0, 1}), static_cast<float>((31 + 1) % 256) / 255.0f);
  EXPECT_TRUE(std::isfinite(c10.run().history.at(0).train_loss));

  // A search's trial reads the same run spec.
  tune::Trial trial;
  trial.train_config = cifar_config("cifar10", dir / "c10", 10);
  const tune::TrialOutcome outcome = tune::train_trial(trial, nullptr);
  EXPECT_TRUE(outcome.ok) << outcome.error;
  EXPECT_EQ(outcome.curve.size(), 1u);

  TrainingRun c100(parse_config(cifar_config("cifar100", dir / "c100", 100)));
  EXPECT_EQ(c100.classes(), 100);
  EXPECT_EQ(c100.train().x.rows(), 6);
  EXPECT_EQ(c100.train().labels[3], 4);  // the fine label
  // The class count is CIFAR-100's even though the files use only some labels.
  EXPECT_THROW(TrainingRun(parse_config(cifar_config("cifar100", dir / "c100", 10))), ConfigError);
  EXPECT_THROW(TrainingRun(parse_config(cifar_config("cifar10", dir / "missing", 10))), IOError);
  fs::remove_all(dir);
}

// A forward and backward pass of ResNet-50 at 224 x 224 (batch 2, synthetic
// images): the loss is finite and the step moves the first convolution's
// weights and the classifier's.
TEST(RealSizePresets, ResNet50TrainsAStepOfBatch2OnSyntheticImages) {
  Json j = preset("resnet50");
  j["batch_size"] = 2;
  j["data"]["train_samples"] = 2;
  j["data"]["test_samples"] = 1;
  TrainingRun run(parse_config(j));
  const auto& params = run.network().parameters();
  const std::vector<float> first = params.front()->value().to_vector(), last = params.back()->value().to_vector();
  const RunResult r = run.run();
  ASSERT_EQ(r.history.size(), 1u);
  EXPECT_TRUE(std::isfinite(r.history[0].train_loss)) << r.history[0].train_loss;
  EXPECT_TRUE(std::isfinite(r.test.loss));
  EXPECT_NE(params.front()->value().to_vector(), first);
  EXPECT_NE(params.back()->value().to_vector(), last);
  EXPECT_EQ(r.summary["synthetic_data"], true);
}

// docs/cli.md's layer table lists every kind of the registry, each row with
// every key of its kind (and docs/networks.md's example uses add and
// concat), so the docs cannot miss one.
TEST(GraphConfig, TheCliGuideListsEveryLayerKind) {
  std::ifstream in(std::string(MAGMADNN_SOURCE_DIR) + "/docs/cli.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  for (const LayerKind& k : layer_kinds()) {
    const bool listed = doc.find("| `" + k.name + "` |") != std::string::npos ||
                        doc.find("`" + k.name + "`, `") != std::string::npos || doc.find(", `" + k.name + "` |") != std::string::npos;
    EXPECT_TRUE(listed) << k.name << " is missing from docs/cli.md's layer table";
    // A kind with a row of its own names every key the registry gives it.
    const std::size_t row = doc.find("| `" + k.name + "` |");
    if (row == std::string::npos) continue;
    const std::string line = doc.substr(row, doc.find('\n', row) - row);
    for (const std::string& key : k.keys) {
      EXPECT_NE(line.find("`" + key + "`"), std::string::npos) << k.name << "'s row in docs/cli.md lacks `" << key << "`";
    }
  }
}

