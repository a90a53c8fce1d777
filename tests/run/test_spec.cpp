// The run specification (magmadnn/run/spec.h): a valid document, the round trip, every error path with its
// message, every activation of the op table (accepted, builds, trains),
// presets and their expansion.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "run/config_error.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "magmadnn/core/registry.h"
#include "magmadnn/layer/activation_layer.h"
#include "magmadnn/parallel/strategy_registry.h"
#include "magmadnn/run/build_network.h"
#include "magmadnn/run/presets.h"
#include "magmadnn/run/spec.h"

using namespace magmadnn;
using namespace magmadnn::run;

namespace {

Json valid() {
  return Json::parse(R"({
    "name": "small",
    "layers": [
      {"type": "conv2d", "filters": 4, "kernel": 3, "padding": [1, 1], "activation": "relu"},
      {"type": "pool", "mode": "average", "kernel": [2, 2]},
      {"type": "flatten"},
      {"type": "dropout", "rate": 0.25},
      {"type": "batchnorm"},
      {"type": "dense", "units": 10, "bias": false},
      {"type": "activation", "function": "softmax"}
    ],
    "loss": "cross_entropy",
    "optimizer": {"type": "adam", "learning_rate": 0.001, "weight_decay": 0.0001},
    "schedule": {"type": "step", "step_epochs": 2, "gamma": 0.5},
    "data": {"limit_train": 100, "val_split": 0.2},
    "early_stopping": {"patience": 2},
    "epochs": 3, "batch_size": 16, "seed": 7
  })");
}

using magmadnn::run::testing::error_of;

Json with(const char* pointer, const Json& value) {
  Json j = valid();
  j[Json::json_pointer(pointer)] = value;
  return j;
}

}  // namespace

TEST(CliConfig, ParsesEveryField) {
  const TrainSpec s = parse_config(valid());
  EXPECT_EQ(s.name, "small");
  ASSERT_EQ(s.layers.size(), 7u);
  EXPECT_EQ(s.layers[0].type, "conv2d");
  EXPECT_EQ(s.layers[0].filters, 4);
  EXPECT_EQ(s.layers[0].kernel, (std::vector<std::int64_t>{3, 3}));  // a scalar means a square window
  EXPECT_EQ(s.layers[0].padding, (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(s.layers[0].stride, (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(s.layers[0].activation, "relu");
  EXPECT_EQ(s.layers[1].mode, "average");
  EXPECT_EQ(s.layers[1].stride, (std::vector<std::int64_t>{2, 2}));  // pool stride defaults to its kernel
  EXPECT_DOUBLE_EQ(s.layers[3].rate, 0.25);
  EXPECT_EQ(s.layers[5].units, 10);
  EXPECT_FALSE(s.layers[5].bias);
  EXPECT_EQ(s.layers[6].activation, "softmax");
  EXPECT_EQ(s.optimizer.type, "adam");
  EXPECT_DOUBLE_EQ(s.optimizer.learning_rate, 0.001);
  EXPECT_DOUBLE_EQ(s.optimizer.weight_decay, 0.0001);
  EXPECT_EQ(s.schedule.type, "step");
  EXPECT_DOUBLE_EQ(s.schedule.gamma, 0.5);
  EXPECT_EQ(s.data.limit_train, 100);
  EXPECT_DOUBLE_EQ(s.data.val_split, 0.2);
  EXPECT_TRUE(s.early_stopping.enabled);
  EXPECT_EQ(s.early_stopping.patience, 2);
  EXPECT_EQ(s.early_stopping.monitor, "val_loss");
  EXPECT_EQ(s.data.dir, "/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(s.epochs, 3);
  EXPECT_EQ(s.batch_size, 16);
  EXPECT_EQ(s.seed, 7u);
}

TEST(CliConfig, RoundTripsThroughJson) {
  const TrainSpec s = parse_config(valid());
  const Json j = to_json(s);
  EXPECT_EQ(parse_config(j), s);
  EXPECT_EQ(parse_config(Json::parse(j.dump())), s);  // and through text
}

// "deterministic": off by default and then not written; true round-trips;
// anything but a boolean is refused with its path.
TEST(CliConfig, DeterministicKey) {
  EXPECT_FALSE(parse_config(valid()).deterministic);
  EXPECT_FALSE(to_json(parse_config(valid())).contains("deterministic"));
  const TrainSpec s = parse_config(with("/deterministic", true));
  EXPECT_TRUE(s.deterministic);
  EXPECT_EQ(to_json(s)["deterministic"], true);
  EXPECT_EQ(parse_config(to_json(s)), s);
  EXPECT_NE(error_of(with("/deterministic", 1)).find("deterministic: expected true or false"), std::string::npos)
      << error_of(with("/deterministic", 1));
}

TEST(CliConfig, ErrorsNameThePathAndTheValue) {
  EXPECT_EQ(error_of(with("/layers/5/units", "abc")),
            R"(layers[5].units: expected an integer in [1, 1048576], got "abc")");
  EXPECT_EQ(error_of(with("/layers/5/units", 0)), "layers[5].units: expected an integer in [1, 1048576], got 0");
  EXPECT_EQ(error_of(with("/layers/5/units", 2.5)), "layers[5].units: expected an integer in [1, 1048576], got 2.5");
  EXPECT_EQ(error_of(with("/epochs", -1)), "epochs: expected an integer in [1, 1000000], got -1");
  EXPECT_EQ(error_of(with("/batch_size", "8")), R"(batch_size: expected an integer in [1, 2147483647], got "8")");
  EXPECT_EQ(error_of(with("/seed", -3)), "seed: expected a non-negative integer, got -3");
  EXPECT_EQ(error_of(with("/optimizer/learning_rate", -0.1)),
            "optimizer.learning_rate: expected a positive number, got -0.1");
  EXPECT_EQ(error_of(with("/optimizer/type", "sdg")),
            R"(optimizer.type: expected one of "sgd", "adam", "adagrad", "rmsprop", "adamw", "lars", "lamb", got "sdg")");
  EXPECT_EQ(error_of(with("/optimizer/momentum", 1.5)),
            "optimizer.momentum: expected a number in [0, 1), got 1.5");
  EXPECT_EQ(error_of(with("/optimizer/nesterov", "yes")), R"(optimizer.nesterov: expected true or false, got "yes")");
  EXPECT_EQ(error_of(with("/layers/3/rate", 1.0)), "layers[3].rate: expected a number in [0, 1), got 1.0");
  EXPECT_EQ(error_of(with("/layers/0/kernel", Json::array({5}))),
            "layers[0].kernel: expected an integer in [1, 65536] or [h, w] of such integers, got [5]");
  EXPECT_EQ(error_of(with("/layers/0/padding", -1)),
            "layers[0].padding: expected an integer in [0, 65536] or [h, w] of such integers, got -1");
  EXPECT_EQ(error_of(with("/layers/1/type", "maxpool")),
            R"(layers[1].type: expected one of "dense", "conv2d", "pool", "global_pool", "flatten", "dropout", "batchnorm", "residual", "activation", "input", "add", "concat", got "maxpool")");
  EXPECT_EQ(error_of(with("/layers/2", 3)), "layers[2]: expected a layer object, got 3");
  EXPECT_EQ(error_of(with("/loss", "hinge")), R"(loss: expected one of "cross_entropy", "mse", got "hinge")");
  EXPECT_EQ(error_of(with("/data/val_split", 1)), "data.val_split: expected a number in [0, 1), got 1");
  EXPECT_EQ(error_of(with("/data/validation", "test")),
            "data.validation: replaced by data.val_split (the fraction of the training set held out for validation; "
            "the test split is no longer used for it)");
  EXPECT_EQ(error_of(with("/early_stopping/monitor", "loss")),
            R"(early_stopping.monitor: expected one of "val_loss", "val_accuracy", got "loss")");
  EXPECT_EQ(error_of(with("/data/val_split", 0)), "early_stopping: monitors val_loss, which needs data.val_split > 0");
  EXPECT_EQ(error_of(with("/schedule", "cosine")), R"(schedule: expected an object, got "cosine")");
  EXPECT_EQ(error_of(with("/layers", Json::array())), "layers: expected a non-empty array of layers, got []");
}

// The activation names come from the op table (through
// layer::all_activations()): each is accepted wherever an activation is, a
// network with it builds and trains, and a wrong name is answered with all.
TEST(CliConfig, AcceptsEveryActivationOfTheTable) {
  std::string listed = R"("none")";
  for (magmadnn::layer::activation_t a : magmadnn::layer::all_activations()) {
    const std::string name = magmadnn::layer::activation_name(a);
    SCOPED_TRACE(name);
    listed += ", \"" + name + "\"";
    const TrainSpec s = parse_config(with("/layers/0/activation", name));
    EXPECT_EQ(s.layers[0].activation, name);
    EXPECT_EQ(parse_config(with("/layers/6/function", name)).layers[6].activation, name);
    Json dense = valid();
    dense["layers"][5]["activation"] = name;
    EXPECT_EQ(parse_config(dense).layers[5].activation, name);
    EXPECT_EQ(parse_config(to_json(s)), s);
  }
  EXPECT_EQ(error_of(with("/layers/0/activation", "swish")),
            "layers[0].activation: expected one of " + listed + R"(, got "swish")");
  EXPECT_EQ(error_of(with("/layers/6/function", "swish")),
            "layers[6].function: expected one of " + listed + R"(, got "swish")");
}

TEST(CliConfig, EveryActivationBuildsAndTrains) {
  // 3 classes, told apart by which of the first three features is largest.
  const std::int64_t n = 60, features = 6, classes = 3;
  std::vector<float> xs, ys;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t best = 0;
    std::vector<float> row;
    for (std::int64_t f = 0; f < features; ++f) row.push_back(u(rng));
    for (std::int64_t c = 1; c < classes; ++c) best = row[c] > row[best] ? c : best;
    xs.insert(xs.end(), row.begin(), row.end());
    for (std::int64_t c = 0; c < classes; ++c) ys.push_back(c == best ? 1.f : 0.f);
  }
  const auto x = magmadnn::Tensor<float>::from_vector({n, features}, xs, magmadnn::HOST);
  const auto y = magmadnn::Tensor<float>::from_vector({n, classes}, ys, magmadnn::HOST);
  for (magmadnn::layer::activation_t a : magmadnn::layer::all_activations()) {
    const std::string name = magmadnn::layer::activation_name(a);
    SCOPED_TRACE(name);
    Json j = {{"layers", Json::array({{{"type", "dense"}, {"units", 8}, {"activation", name}},
                                      {{"type", "dense"}, {"units", classes}, {"activation", "softmax"}}})},
              {"optimizer", {{"type", "adam"}, {"learning_rate", 0.05}}},
              {"epochs", 15},
              {"batch_size", 20},
              {"seed", 3}};
    const TrainSpec spec = parse_config(j);
    NetworkBuild b = build_network(spec, {features}, n / spec.batch_size, classes);
    const magmadnn::model::History h = b.model->fit(x, y);
    ASSERT_EQ(h.size(), 15u);
    EXPECT_TRUE(std::isfinite(h.back().train_loss));
    EXPECT_LT(h.back().train_loss, h.front().train_loss);
  }
}

TEST(CliConfig, UnknownAndMissingKeys) {
  EXPECT_EQ(error_of(with("/layers/5/unit", 3)),
            R"(layers[5].unit: unknown key in a dense layer (allowed: "type", "name", "inputs", "parallel", "units", "activation", "bias", "fold_bias"))");
  EXPECT_EQ(error_of(with("/layers/2/units", 3)),
            R"(layers[2].units: unknown key in a flatten layer (allowed: "type", "name", "inputs"))");
  EXPECT_EQ(error_of(with("/epoch", 3)).rfind("epoch: unknown key in the config (allowed: ", 0), 0u);
  Json j = valid();
  j["layers"][5].erase("units");
  EXPECT_EQ(error_of(j), "layers[5].units: missing (a dense layer needs its number of units)");
  j = valid();
  j["layers"][0].erase("type");
  EXPECT_EQ(error_of(j).rfind("layers[0].type: missing", 0), 0u);
  j = valid();
  j.erase("layers");
  EXPECT_EQ(error_of(j), "layers: missing (a config needs at least one layer)");
  EXPECT_EQ(error_of(Json::array()), "config: expected an object, got []");
  EXPECT_EQ(error_of(with("/optimizer/nesterov", true)), "optimizer.nesterov: true needs a positive optimizer.momentum");
}

// Every integer key has one range (limits::), checked before any cast: a
// value past it is refused with the range, never truncated (4294967296
// epochs used to train 0 epochs).
TEST(CliConfig, EveryIntegerIsCheckedAgainstItsRange) {
  EXPECT_EQ(error_of(with("/epochs", 4294967296LL)), "epochs: expected an integer in [1, 1000000], got 4294967296");
  EXPECT_EQ(error_of(with("/epochs", Json(18446744073709551615ULL))),
            "epochs: expected an integer in [1, 1000000], got 18446744073709551615");
  EXPECT_EQ(error_of(with("/batch_size", 4294967296LL)),
            "batch_size: expected an integer in [1, 2147483647], got 4294967296");
  EXPECT_EQ(error_of(with("/data/limit_train", 4294967296LL)),
            "data.limit_train: expected an integer in [0, 2147483647], got 4294967296");
  EXPECT_EQ(error_of(with("/data/limit_test", -1)), "data.limit_test: expected an integer in [0, 2147483647], got -1");
  EXPECT_EQ(error_of(with("/layers/5/units", 1 << 21)),
            "layers[5].units: expected an integer in [1, 1048576], got 2097152");
  EXPECT_EQ(error_of(with("/layers/0/filters", 1 << 17)),
            "layers[0].filters: expected an integer in [1, 65536], got 131072");
  EXPECT_EQ(error_of(with("/layers/0/kernel", Json::array({3, 4294967299LL}))),
            "layers[0].kernel: expected an integer in [1, 65536] or [h, w] of such integers, got [3,4294967299]");
  EXPECT_EQ(error_of(with("/early_stopping/patience", 4294967296LL)),
            "early_stopping.patience: expected an integer in [0, 1000000], got 4294967296");
  EXPECT_EQ(parse_config(with("/seed", Json(18446744073709551615ULL))).seed, 18446744073709551615ULL);
  EXPECT_EQ(parse_config(with("/epochs", 1000000)).epochs, 1000000);
}

// The name becomes a folder under runs/: one plain file-name component.
TEST(CliConfig, NameIsAPlainFileNameComponent) {
  const std::string want =
      "name: expected 1 to 100 letters, digits, '-', '_' or '.' (not starting with '.'), got ";
  for (const char* bad : {"../../../x", "a/b", "", ".hidden", "..", "x y", "a\\b"}) {
    EXPECT_EQ(error_of(with("/name", bad)), want + Json(bad).dump()) << bad;
  }
  EXPECT_EQ(error_of(with("/name", std::string(101, 'a'))), want + Json(std::string(101, 'a')).dump());
  EXPECT_EQ(parse_config(with("/name", "lenet5-v1.2_b")).name, "lenet5-v1.2_b");
}

// The JSON library's own words never reach the user: a document that is not
// an object, a number beyond a double, a directory given as the file.
TEST(CliConfig, ReadRefusesNonObjectsHugeNumbersAndDirectories) {
  const std::string dir = ::testing::TempDir();
  auto message = [](const std::string& path) -> std::string {
    try {
      read_json_file(path);
    } catch (const ConfigError& e) {
      return e.what();
    } catch (const std::exception& e) {
      return std::string("not a ConfigError: ") + e.what();
    }
    return "";
  };
  std::ofstream(dir + "/cli_array.json") << "[]";
  EXPECT_EQ(message(dir + "/cli_array.json"), "config: expected an object in " + dir + "/cli_array.json, got []");
  std::ofstream(dir + "/cli_huge.json") << "{\"epochs\": 3,\n \"data\": {\"limit_train\": 1e999}}";
  EXPECT_EQ(message(dir + "/cli_huge.json"),
            "config: invalid JSON in " + dir + "/cli_huge.json: data.limit_train (line 2, column 26): number out of range");
  std::ofstream(dir + "/cli_huge2.json") << "{\"layers\": [1, {\"kernel\": [3, -1e999]}]}";
  EXPECT_EQ(message(dir + "/cli_huge2.json"),
            "config: invalid JSON in " + dir + "/cli_huge2.json: layers[1].kernel[1] (line 1, column 31): number out of range");
  std::filesystem::create_directories(dir + "/cli_config_dir");
  EXPECT_EQ(message(dir + "/cli_config_dir"),
            "config: config file " + dir + "/cli_config_dir is a directory, not a JSON file");
}

TEST(CliConfig, ReadsFilesAndReportsSyntaxErrors) {
  const std::string path = ::testing::TempDir() + "/cli_config_bad.json";
  std::ofstream(path) << "{\"layers\": [ }";
  try {
    read_json_file(path);
    FAIL() << "no error for invalid JSON";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("invalid JSON in " + path), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_json_file(path + ".missing"), ConfigError);
}

TEST(CliConfig, MergeReplacesLeavesAndMergesObjects) {
  Json base = Json::parse(R"({"epochs": 5, "optimizer": {"type": "sgd", "learning_rate": 0.05}, "layers": [1, 2]})");
  merge_json(base, Json::parse(R"({"optimizer": {"learning_rate": 0.1}, "layers": [3]})"));
  EXPECT_EQ(base["optimizer"]["type"], "sgd");
  EXPECT_EQ(base["optimizer"]["learning_rate"], 0.1);
  EXPECT_EQ(base["layers"], Json::array({3}));
  EXPECT_EQ(base["epochs"], 5);
}

TEST(CliPresets, MlpMatchesThePaperBenchmark) {
  const TrainSpec s = parse_config(preset("mlp", 3));
  ASSERT_EQ(s.layers.size(), 5u);  // flatten, 3 x hidden, output
  EXPECT_EQ(s.layers.front().type, "flatten");
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(s.layers[i].type, "dense");
    EXPECT_EQ(s.layers[i].units, 528);
    EXPECT_EQ(s.layers[i].activation, "sigmoid");
  }
  EXPECT_EQ(s.layers.back().units, 10);
  EXPECT_EQ(s.layers.back().activation, "softmax");
  EXPECT_EQ(s.optimizer.type, "sgd");
  EXPECT_DOUBLE_EQ(s.optimizer.learning_rate, 0.05);
  EXPECT_DOUBLE_EQ(s.optimizer.weight_decay, 0.001);
  EXPECT_EQ(s.batch_size, 100);
  EXPECT_EQ(s.epochs, 5);
  EXPECT_EQ(parse_config(preset("mlp")).layers.size(), 3u);  // one hidden layer by default
}

TEST(CliPresets, ResnetHasAStemThreeResidualStagesAndGlobalPooling) {
  const TrainSpec s = parse_config(preset("resnet"));
  std::vector<std::int64_t> filters;
  std::vector<std::int64_t> strides;
  int global = 0;
  for (const auto& l : s.layers) {
    if (l.type == "residual") filters.push_back(l.filters), strides.push_back(l.stride[0]);
    global += l.type == "global_pool";
  }
  EXPECT_EQ(filters, (std::vector<std::int64_t>{16, 32, 64}));
  EXPECT_EQ(strides, (std::vector<std::int64_t>{1, 2, 2}));
  EXPECT_EQ(global, 1);
  EXPECT_EQ(s.layers.front().type, "conv2d");
  EXPECT_FALSE(s.layers.front().bias);
  EXPECT_EQ(s.batch_size, 128);
  // The config round-trips through JSON, residual and global_pool settings included.
  EXPECT_EQ(parse_config(to_json(s)).layers, s.layers);
}

TEST(CliConfig, ResidualAndGlobalPoolSettingsAreChecked) {
  const auto with = [](Json layer) {
    Json j = {{"layers", Json::array({layer, {{"type", "dense"}, {"units", 10}}})}};
    try {
      parse_config(j);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(with({{"type", "residual"}}).find("layers[0].filters: missing"), std::string::npos);
  EXPECT_NE(with({{"type", "residual"}, {"filters", 8}, {"stride", 0}}).find("layers[0].stride"), std::string::npos);
  EXPECT_NE(with({{"type", "residual"}, {"filters", 8}, {"kernel", 3}}).find("layers[0].kernel"), std::string::npos);
  EXPECT_NE(with({{"type", "global_pool"}, {"mode", "median"}}).find("layers[0].mode"), std::string::npos);
  EXPECT_EQ(with({{"type", "global_pool"}, {"mode", "max"}}), "");
}

TEST(CliPresets, Lenet5UsesReluMaxPoolingAndMomentum) {
  const TrainSpec s = parse_config(preset("lenet5"));
  int convs = 0, pools = 0, dense = 0;
  for (const auto& l : s.layers) {
    convs += l.type == "conv2d";
    pools += l.type == "pool";
    dense += l.type == "dense";
    if (l.type == "conv2d") EXPECT_EQ(l.activation, "relu");
    if (l.type == "pool") EXPECT_EQ(l.mode, "max");
  }
  EXPECT_EQ(convs, 2);
  EXPECT_EQ(pools, 2);
  EXPECT_EQ(dense, 3);
  EXPECT_EQ(s.optimizer.type, "sgd");
  EXPECT_GT(s.optimizer.momentum, 0.0);
  EXPECT_EQ(s.epochs, 3);
}

TEST(CliPresets, UnknownNameListsTheAvailableOnes) {
  try {
    preset("vgg16");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), R"(--preset: unknown preset "vgg16" (available: mlp, lenet5, resnet, resnet50, alexnet, alexnet-cifar, googlenet))");
  }
}

TEST(CliConfig, TheDistributedSectionIsRangeChecked) {
  Json j = valid();
  j["distributed"] = {{"strategy", "ring"}, {"bucket_mb", 0.5}, {"average_every", 8}, {"staleness", 0},
                      {"watchdog_s", 5}};
  const TrainSpec s = parse_config(j);
  EXPECT_EQ(s.distributed.strategy, "ring");
  EXPECT_DOUBLE_EQ(s.distributed.bucket_mb, 0.5);
  EXPECT_EQ(s.distributed.average_every, 8);
  EXPECT_EQ(s.distributed.staleness, 0);
  EXPECT_DOUBLE_EQ(s.distributed.watchdog_s, 5.0);
  EXPECT_EQ(parse_config(to_json(s)), s);
  EXPECT_EQ(parse_config(valid()).distributed, DistributedSpec{});  // absent: the defaults
  // The choices are the strategy registry's, by order: the built-ins in
  // this order, and any strategy added in its own files (it joins the list
  // with no edit here).
  std::vector<std::string> strategies = distributed::strategy_names();
  std::vector<std::string> builtins;
  for (const std::string& n : strategies) {
    if (n == "allreduce" || n == "weight-avg" || n == "ps" || n == "asgd" || n == "ring") builtins.push_back(n);
  }
  EXPECT_EQ(builtins, (std::vector<std::string>{"allreduce", "weight-avg", "ps", "asgd", "ring"}));
  EXPECT_EQ(error_of(with("/distributed/strategy", "horovod")),
            "distributed.strategy: expected one of " + names_text(strategies, ", ", "\"") + R"(, got "horovod")");
  EXPECT_EQ(error_of(with("/distributed/bucket_mb", 0)), "distributed.bucket_mb: expected a number in (0, 4096], got 0");
  EXPECT_EQ(error_of(with("/distributed/watchdog_s", 0.0)),
            "distributed.watchdog_s: expected a number in (0, 86400], got 0.0");
  EXPECT_EQ(error_of(with("/distributed/watchdog_s", 1e6)),
            "distributed.watchdog_s: expected a number in [0, 86400], got 1000000.0");
  EXPECT_EQ(error_of(with("/distributed/average_every", 0)),
            "distributed.average_every: expected an integer in [1, 1000000], got 0");
  EXPECT_EQ(error_of(with("/distributed/staleness", -1)),
            "distributed.staleness: expected an integer in [0, 1000000], got -1");
  EXPECT_NE(error_of(with("/distributed/ranks", 4)).find("distributed.ranks: unknown key in the distributed settings"),
            std::string::npos);
}

// The large-batch keys: LARS/LAMB settings, the rate scaled with the global
// batch, batch growth; each range-checked with its JSON path.
TEST(CliConfig, LargeBatchKeys) {
  Json j = valid();
  j["optimizer"] = {{"type", "lars"}, {"learning_rate", 2.0}, {"momentum", 0.9}, {"trust_coefficient", 0.002},
                    {"exclude_vectors", true}};
  j["schedule"] = {{"warmup_epochs", 1}, {"lr_scaling", "sqrt"}, {"base_batch", 4}};
  j["batch_growth"] = {{"factor", 2}, {"every_epochs", 2}, {"max", 64}};
  const TrainSpec s = parse_config(j);
  EXPECT_EQ(s.optimizer.type, "lars");
  EXPECT_EQ(s.optimizer.trust_coefficient, 0.002);
  EXPECT_TRUE(s.optimizer.exclude_vectors);
  EXPECT_EQ(s.schedule.lr_scaling, "sqrt");
  EXPECT_EQ(s.schedule.base_batch, 4);
  EXPECT_TRUE(s.batch_growth.enabled);
  EXPECT_EQ(s.batch_growth.factor, 2);
  EXPECT_EQ(s.batch_growth.every_epochs, 2);
  EXPECT_EQ(s.batch_growth.max, 64);
  EXPECT_EQ(parse_config(to_json(s)), s);  // the round trip keeps them
  // base_batch defaults to batch_size: then only a per-rank batch_size (world_size > 1) scales the rate.
  EXPECT_EQ(parse_config(valid()).schedule.base_batch, 16);
  EXPECT_FALSE(parse_config(valid()).batch_growth.enabled);
  EXPECT_FALSE(to_json(parse_config(valid())).contains("batch_growth"));

  EXPECT_EQ(error_of(with("/schedule/lr_scaling", "cubic")),
            R"(schedule.lr_scaling: expected one of "none", "linear", "sqrt", got "cubic")");
  EXPECT_EQ(error_of(with("/schedule/base_batch", 0)),
            "schedule.base_batch: expected an integer in [1, 2147483647], got 0");
  EXPECT_EQ(error_of(with("/optimizer/trust_coefficient", 0)),
            "optimizer.trust_coefficient: expected a positive number, got 0");
  EXPECT_EQ(error_of(with("/optimizer/exclude_vectors", 1)),
            "optimizer.exclude_vectors: expected true or false, got 1");
  EXPECT_EQ(error_of(with("/batch_growth", Json{{"factor", 2}})),
            "batch_growth.max: missing (the largest batch the growth may reach)");
  EXPECT_EQ(error_of(with("/batch_growth", Json{{"factor", 0}, {"max", 64}})),
            "batch_growth.factor: expected an integer in [1, 1024], got 0");
  EXPECT_EQ(error_of(with("/batch_growth", Json{{"every_epochs", 0}, {"max", 64}})),
            "batch_growth.every_epochs: expected an integer in [1, 1000000], got 0");
  EXPECT_EQ(error_of(with("/batch_growth", Json{{"max", 8}})),
            "batch_growth.max: expected at least batch_size (16), got 8");
  EXPECT_EQ(error_of(with("/batch_growth", Json{{"max", 4294967296LL}})),
            "batch_growth.max: expected an integer in [1, 4294967295], got 4294967296");
  EXPECT_EQ(error_of(with("/batch_growth", Json{{"max", 64}, {"start", 1}})).rfind(
                "batch_growth.start: unknown key in batch growth (allowed: ", 0),
            0u);
}

TEST(CliConfig, LossScalingKeys) {
  const TrainSpec d = parse_config(valid());
  EXPECT_EQ(d.loss_scaling, LossScalingSpec{});
  EXPECT_FALSE(to_json(d).contains("loss_scaling"));  // the default is not written
  Json j = valid();
  j["loss_scaling"] = {{"mode", "on"}, {"init_scale", 256}, {"growth_interval", 50}};
  const TrainSpec s = parse_config(j);
  EXPECT_EQ(s.loss_scaling.mode, "on");
  EXPECT_EQ(s.loss_scaling.init_scale, 256.0);
  EXPECT_EQ(s.loss_scaling.growth_interval, 50);
  EXPECT_EQ(parse_config(to_json(s)), s);
  EXPECT_EQ(error_of(with("/loss_scaling/mode", "yes")),
            R"(loss_scaling.mode: expected one of "auto", "on", "off", got "yes")");
  EXPECT_EQ(error_of(with("/loss_scaling/growth_interval", 0)),
            "loss_scaling.growth_interval: expected an integer in [1, 1000000000], got 0");
  EXPECT_EQ(error_of(with("/loss_scaling/init_scale", 0.5)),
            "loss_scaling.init_scale: expected a number in [1, 16777216], got 0.5");
}

// Pipelines in the config ("parallel": {"pipeline": ...}; run/pipeline_config.h):
// what parses, what is written back, and each refusal with its reason.
namespace {

Json pipelined(Json pipeline) {
  Json j = preset("lenet5");
  j["batch_size"] = 32;
  j["parallel"] = {{"pipeline", std::move(pipeline)}};
  return j;
}

}  // namespace

TEST(SpecPipeline, ParsesAndReadsBack) {
  const TrainSpec s = parse_config(pipelined({{"stages", 2}, {"micro_batches", 4}, {"schedule", "gpipe"}}));
  EXPECT_TRUE(s.pipeline.enabled);
  EXPECT_EQ(s.pipeline.stages, 2);
  EXPECT_EQ(s.pipeline.micro_batches, 4);
  EXPECT_EQ(s.pipeline.schedule, "gpipe");
  EXPECT_EQ(parse_config(to_json(s)), s);
  EXPECT_FALSE(to_json(parse_config(preset("lenet5"))).contains("parallel")) << "written only with a pipeline";
  const TrainSpec c = parse_config(pipelined({{"stages", 2}, {"cuts", {0, 5}}}));
  EXPECT_EQ(c.pipeline.cuts, (std::vector<std::int64_t>{0, 5}));
  EXPECT_EQ(to_json(c)["parallel"]["pipeline"]["cuts"], Json({0, 5}));
  const TrainSpec f = parse_config(pipelined({{"stages", 2}, {"balance", "flops"}}));
  EXPECT_EQ(f.pipeline.balance, "flops");
  EXPECT_EQ(parse_config(to_json(f)), f);
  EXPECT_FALSE(to_json(s)["parallel"]["pipeline"].contains("balance")) << "written only when not the default";
}

TEST(SpecPipeline, RefusesWhatCannotRun) {
  const int layers = static_cast<int>(preset("lenet5")["layers"].size());
  EXPECT_EQ(error_of(pipelined({{"stages", layers + 1}})),
            "parallel.pipeline.stages: " + std::to_string(layers + 1) + " stages but the network has only " +
                std::to_string(layers) + " layers (each stage needs at least one)");
  EXPECT_EQ(error_of(pipelined({{"stages", 2}, {"micro_batches", 3}})),
            "parallel.pipeline.micro_batches: 3 micro-batches do not divide batch_size 32 (every micro-batch must "
            "have the same size)");
  EXPECT_EQ(error_of(pipelined({{"stages", 2}, {"replicas", 3}})),
            "parallel.pipeline.replicas: 3 replicas do not divide batch_size 32");
  EXPECT_EQ(error_of(pipelined({{"stages", 2}, {"replicas", 2}, {"micro_batches", 32}})),
            "parallel.pipeline.micro_batches: 32 micro-batches do not divide a replica's 16 rows (batch_size 32 / 2 "
            "replicas)");
  EXPECT_EQ(parse_config(pipelined({{"stages", 2}, {"replicas", 2}, {"micro_batches", 8}})).pipeline.replicas, 2);
  EXPECT_EQ(error_of(pipelined({{"stages", 2}, {"cuts", {0}}})),
            "parallel.pipeline.cuts: expected one first layer per stage (2), got 1");
  EXPECT_EQ(error_of(pipelined({{"stages", 2}, {"cuts", {1, 3}}})),
            "parallel.pipeline.cuts: the first stage must start at layer 0");
  EXPECT_EQ(error_of(pipelined({{"stages", 2}, {"schedule", "zb"}})),
            R"(parallel.pipeline.schedule: expected one of "gpipe", "1f1b", got "zb")");
  Json growth = pipelined({{"stages", 2}});
  growth["batch_growth"] = {{"max", 64}};
  EXPECT_THAT(error_of(growth), ::testing::HasSubstr("batch_growth: not supported with a pipeline yet"));
  Json dropout = pipelined({{"stages", 2}});
  dropout["layers"].insert(dropout["layers"].begin() + 5, Json{{"type", "dropout"}, {"rate", 0.5}});
  EXPECT_THAT(error_of(dropout), ::testing::HasSubstr("layers[5]: a dropout layer cannot be pipelined yet"));
  Json model = pipelined({{"stages", 2}});
  model["distributed"] = {{"parallel", "auto"}};
  EXPECT_THAT(error_of(model), ::testing::HasSubstr("parallel.pipeline: a pipeline of model-parallel layers"));
}

// A residual block of plain layers: 0 conv, 1 conv, 2 add(input of 1, 1),
// 3 flatten, 4 dense. A cut before layer 2 leaves the skip connection
// (layer 0's output, read by the add) on the other side.
TEST(SpecPipeline, RefusesACutInsideAResidualBranch) {
  Json j = {{"batch_size", 8},
            {"layers",
             {{{"type", "conv2d"}, {"name", "a"}, {"filters", 4}, {"kernel", 3}, {"padding", 1}},
              {{"type", "conv2d"}, {"name", "b"}, {"filters", 4}, {"kernel", 3}, {"padding", 1}},
              {{"type", "add"}, {"inputs", {"a", "b"}}, {"activation", "relu"}},
              {{"type", "flatten"}},
              {{"type", "dense"}, {"units", 10}}}}};
  j["parallel"] = {{"pipeline", {{"stages", 2}, {"cuts", {0, 2}}}}};
  EXPECT_EQ(error_of(j), "parallel.pipeline.cuts: layer 2 (stage 1) reads layer 0 (stage 0): the cut before layer 2 "
                         "is inside a branch (a residual or skip connection); only the output of a stage's last "
                         "layer can cross to the next stage");
  j["parallel"]["pipeline"]["cuts"] = {0, 3};
  EXPECT_EQ(error_of(j), "");
  // Balanced cuts keep out of the branch: before layers 1, 3 and 4 (layer
  // 0's output crosses alone before 1), not before 2; 5 stages need 4 places.
  j["parallel"]["pipeline"] = {{"stages", 5}};
  EXPECT_EQ(error_of(j), "parallel.pipeline.stages: 5 stages, but the network can be cut in only 3 places (a cut "
                         "inside a branch, such as a residual block's, is not one)");
}
