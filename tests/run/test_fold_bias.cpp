// "fold_bias" on a dense layer (SHM-Learn-Dist §4): the key, its refusals,
// three epochs of training equal to the separate bias, and checkpoints of
// one form refused by the other, both ways, naming the layer and the forms.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "config_error.h"
#include "magmadnn/layer/fully_connected.h"
#include "magmadnn/run/run_training.h"

using namespace magmadnn;
using namespace magmadnn::run;
using magmadnn::run::testing::error_of;
namespace fs = std::filesystem;

namespace {

Json config(bool fold) {
  Json dense1 = {{"type", "dense"}, {"units", 24}, {"activation", "relu"}};
  Json dense2 = {{"type", "dense"}, {"units", 5}, {"activation", "softmax"}};
  if (fold) dense1["fold_bias"] = dense2["fold_bias"] = true;
  return {{"name", "fold"},
          {"layers", Json::array({{{"type", "flatten"}}, dense1, dense2})},
          {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.1}, {"momentum", 0.9}, {"weight_decay", 0.001}}},
          {"epochs", 3},
          {"batch_size", 32},
          {"seed", 7},
          {"data",
           {{"dataset", "synthetic"}, {"shape", {1, 8, 8}}, {"classes", 5}, {"train_samples", 256},
            {"test_samples", 64}, {"val_split", 0}}}};
}

// Every dense layer's W and b, whichever form holds them.
std::vector<float> dense_values(TrainingRun& run) {
  std::vector<float> v;
  for (const auto& l : run.network().layers()) {
    if (const auto* fc = dynamic_cast<const layer::FullyConnectedLayer<float>*>(l.get())) {
      const auto [w, b] = fc->unfolded();
      for (const Tensor<float>* t : {&w, &b}) {
        const std::vector<float> x = t->to_vector();
        v.insert(v.end(), x.begin(), x.end());
      }
    }
  }
  return v;
}

std::string load_error(TrainingRun& run, const std::string& path) {
  try {
    run.network().load(path);
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(FoldBias, TheKeyIsReadWrittenAndRefusedWhereItCannotApply) {
  const TrainSpec s = parse_config(config(true));
  EXPECT_TRUE(s.layers[1].fold_bias);
  EXPECT_EQ(parse_config(to_json(s)), s);
  EXPECT_EQ(to_json(s)["layers"][1]["fold_bias"], true);
  EXPECT_FALSE(to_json(parse_config(config(false)))["layers"][1].contains("fold_bias"));  // off: not written
  Json j = config(true);
  j["layers"][1]["bias"] = false;
  EXPECT_EQ(error_of(j), R"(layers[1].fold_bias: true needs "bias": true (there is no bias to fold into the weights))");
  j = config(false);
  j["layers"][1]["fold_bias"] = "yes";
  EXPECT_EQ(error_of(j).rfind("layers[1].fold_bias: ", 0), 0u) << error_of(j);
  j = config(false);
  j["layers"][0]["fold_bias"] = true;  // a flatten layer has no such key
  EXPECT_EQ(error_of(j).rfind("layers[0].fold_bias: unknown key in a flatten layer", 0), 0u) << error_of(j);
}

// Same seed, same data, same steps: the losses of every epoch and the final
// weights agree within 1e-6 (the sums differ only in where b is added).
TEST(FoldBias, ThreeEpochsTrainAsTheSeparateBias) {
  TrainingRun sep(parse_config(config(false)));
  TrainingRun fold(parse_config(config(true)));
  ASSERT_EQ(dense_values(sep), dense_values(fold));  // same initial values
  EXPECT_EQ(fold.network().parameters().size(), 2u);  // one Wb per layer
  const RunResult a = sep.run(), b = fold.run();
  ASSERT_EQ(a.history.size(), 3u);
  ASSERT_EQ(b.history.size(), 3u);
  for (std::size_t e = 0; e < 3; ++e) EXPECT_NEAR(a.history[e].train_loss, b.history[e].train_loss, 1e-6) << e;
  EXPECT_LT(a.history[2].train_loss, a.history[0].train_loss);  // it trained
  EXPECT_NEAR(a.test.loss, b.test.loss, 1e-6);
  const std::vector<float> va = dense_values(sep), vb = dense_values(fold);
  ASSERT_EQ(va.size(), vb.size());
  for (std::size_t i = 0; i < va.size(); ++i) ASSERT_NEAR(va[i], vb[i], 1e-6) << i;
}

// Layer 0 is the input, 1 the flatten, 2 the first dense layer.
TEST(FoldBias, ACheckpointOfOneFormIsRefusedByTheOther) {
  const fs::path dir = fs::temp_directory_path() / ("magmadnn_fold_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  TrainingRun sep(parse_config(config(false)));
  TrainingRun fold(parse_config(config(true)));
  sep.network().save((dir / "sep.ckpt").string());
  fold.network().save((dir / "fold.ckpt").string());
  const std::string to_fold = load_error(fold, (dir / "sep.ckpt").string());
  EXPECT_NE(to_fold.find("layer '2_fullyconnected' folds its bias into its weights"), std::string::npos) << to_fold;
  EXPECT_NE(to_fold.find("written with fold_bias: false"), std::string::npos) << to_fold;
  const std::string to_sep = load_error(sep, (dir / "fold.ckpt").string());
  EXPECT_NE(to_sep.find("layer '2_fullyconnected' keeps W and b apart"), std::string::npos) << to_sep;
  EXPECT_NE(to_sep.find("written with fold_bias: true"), std::string::npos) << to_sep;
  // Each form reads its own.
  EXPECT_EQ(load_error(fold, (dir / "fold.ckpt").string()), "(no error)");
  EXPECT_EQ(load_error(sep, (dir / "sep.ckpt").string()), "(no error)");
  fs::remove_all(dir);
}
