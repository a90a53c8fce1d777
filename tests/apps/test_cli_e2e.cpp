// The magmadnn command end to end, in process, on a small synthetic IDX data
// set written to a temp dir: train, the run folder, evaluate, predict,
// --resume, and the command-line errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli.h"
#include "magmadnn/core/config.h"
#if MAGMADNN_HAVE_IMAGES
#include "data/jpeg_files.h"
#endif
#include "magmadnn/backend/cpu/cpu_gemm.h"
#include "magmadnn/backend/registry.h"
#include "magmadnn/run/presets.h"
#include "magmadnn/run/spec.h"
#include "magmadnn/io/atomic_file.h"
#include "magmadnn/io/checkpoint.h"
#include "magmadnn/io/idx.h"
#include "magmadnn/optimizer/factory.h"
#include "folder_lock.h"
#include "run_folder.h"

using namespace magmadnn;
using namespace magmadnn::cli;
namespace fs = std::filesystem;

namespace {

constexpr int kSide = 8, kClasses = 3;

// Class c lights up rows [2c+1, 2c+3) of an 8x8 image; the rest is noise.
// label_shift != 0 writes wrong labels ((c + shift) mod classes) for the images.
void write_split(const std::string& dir, const std::string& prefix, int n, unsigned seed,
                 std::vector<std::vector<double>>* keep = nullptr, std::vector<int>* keep_labels = nullptr,
                 int label_shift = 0) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> noise(0, 60), label(0, kClasses - 1);
  std::vector<double> pixels, labels;
  for (int i = 0; i < n; ++i) {
    const int c = label(rng);
    std::vector<double> img;
    for (int r = 0; r < kSide; ++r) {
      for (int col = 0; col < kSide; ++col) {
        img.push_back(r >= 2 * c + 1 && r < 2 * c + 3 ? 200 + noise(rng) / 2 : noise(rng));
      }
    }
    pixels.insert(pixels.end(), img.begin(), img.end());
    labels.push_back((c + label_shift) % kClasses);
    if (keep) keep->push_back(img);
    if (keep_labels) keep_labels->push_back(c);
  }
  io::write_idx(dir + "/" + prefix + "-images-idx3-ubyte.gz", io::IdxType::u8, {n, kSide, kSide}, pixels, true);
  io::write_idx(dir + "/" + prefix + "-labels-idx1-ubyte", io::IdxType::u8, {n}, labels, false);
}

struct Result {
  int rc;
  std::string out, err;
};

Result run_cmd(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int rc = run_cli(args, out, err);
  return {rc, out.str(), err.str()};
}

class CliEndToEnd : public ::testing::Test {
 protected:
  static void TearDownTestSuite() { fs::remove_all(root_); }
  static void SetUpTestSuite() {
    // One folder per process: ctest runs each test of this suite as its own
    // process, in parallel, and a shared folder would be removed under a
    // neighbour's feet.
    root_ = ::testing::TempDir() + "/magmadnn_cli_e2e_" + std::to_string(::getpid());
    fs::remove_all(root_);
    fs::create_directories(root_ + "/data");
    write_split(root_ + "/data", "train", 240, 1);
    write_split(root_ + "/data", "t10k", 60, 2, &test_images_, &test_labels_);
    const Json cfg = {
        {"name", "tiny"},
        {"layers", Json::array({{{"type", "flatten"}},
                                {{"type", "dense"}, {"units", 16}, {"activation", "relu"}},
                                {{"type", "dense"}, {"units", kClasses}, {"activation", "softmax"}}})},
        {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.1}, {"momentum", 0.9}}},
        {"epochs", 4},
        {"batch_size", 20},
        {"seed", 5},
        {"data", {{"dataset", "idx"}, {"dir", root_ + "/data"}}}};
    std::ofstream(root_ + "/tiny.json") << cfg.dump(2);
  }
  static std::string path(const std::string& name) { return root_ + "/" + name; }
  static Json read(const std::string& file) { return read_json_file(file); }

  static std::string root_;
  static std::vector<std::vector<double>> test_images_;
  static std::vector<int> test_labels_;
};
std::string CliEndToEnd::root_;
std::vector<std::vector<double>> CliEndToEnd::test_images_;
std::vector<int> CliEndToEnd::test_labels_;

}  // namespace

// The validation curve comes from training samples held out (--val-split,
// 0.1 by default), never from the test split: with a test split whose labels
// are all wrong, validation accuracy stays high while test accuracy is ~0.
TEST_F(CliEndToEnd, ValidationIsHeldOutOfTheTrainingSetNotTakenFromTheTestSet) {
  fs::create_directories(path("wrongtest"));
  write_split(path("wrongtest"), "train", 240, 1);
  write_split(path("wrongtest"), "t10k", 60, 2, nullptr, nullptr, /*label_shift=*/1);
  const Result r = run_cmd({"train", "--config", path("tiny.json"), "--data", path("wrongtest"), "--out",
                        path("run-val"), "--overwrite", "--quiet"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const Json s = read(path("run-val/summary.json"));
  EXPECT_EQ(s["validation_samples"], 24);  // 10% of 240, stratified
  EXPECT_EQ(s["train_samples"], 216);
  EXPECT_LE(s["test_accuracy"].get<double>(), 0.1);
  const auto metrics = RunFolder(path("run-val")).read_metrics();
  ASSERT_EQ(metrics.size(), 4u);
  EXPECT_GE(metrics.back().val_accuracy, 0.9);
  EXPECT_DOUBLE_EQ(read(path("run-val/config.json"))["data"]["val_split"].get<double>(), 0.1);

  // --val-split 0: no validation columns; a bad fraction is named.
  const Result none = run_cmd({"train", "--config", path("tiny.json"), "--data", path("wrongtest"), "--out",
                           path("run-noval"), "--overwrite", "--quiet", "--val-split", "0"});
  ASSERT_EQ(none.rc, 0) << none.err;
  EXPECT_EQ(read(path("run-noval/summary.json"))["validation_samples"], 0);
  EXPECT_TRUE(std::isnan(RunFolder(path("run-noval")).read_metrics().back().val_accuracy));
  const Result bad = run_cmd({"train", "--config", path("tiny.json"), "--val-split", "1", "--out", path("run-bad")});
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.err.find("--val-split: expected a number in [0, 1), got \"1\""), std::string::npos) << bad.err;
}

// Early stopping watches the held-out validation loss: with a min_delta no
// epoch can beat, the first epoch is the best and training stops `patience`
// epochs later.
TEST_F(CliEndToEnd, EarlyStoppingStopsOnTheValidationLoss) {
  Json cfg = read(path("tiny.json"));
  cfg["epochs"] = 20;
  cfg["early_stopping"] = {{"min_delta", 100.0}};
  std::ofstream(path("tiny-es.json")) << cfg.dump(2);
  const Result r = run_cmd({"train", "--config", path("tiny-es.json"), "--out", path("run-es"), "--overwrite", "--quiet",
                        "--early-stopping", "2"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(RunFolder(path("run-es")).read_metrics().size(), 3u);
  const Json saved = read(path("run-es/config.json"))["early_stopping"];
  EXPECT_EQ(saved["patience"], 2);
  EXPECT_EQ(saved["monitor"], "val_loss");
  const Result bad = run_cmd({"train", "--config", path("tiny.json"), "--val-split", "0", "--early-stopping", "2",
                          "--out", path("run-es-bad")});
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.err.find("needs data.val_split > 0"), std::string::npos) << bad.err;
}

TEST_F(CliEndToEnd, TrainWritesACompleteRunFolder) {
  const Result r = run_cmd({"train", "--config", path("tiny.json"), "--out", path("run"), "--overwrite"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("epoch 4/4"), std::string::npos) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(test accuracy: (0\.\d{4}|1\.0000) \(loss [0-9.e+-]+\) in [0-9.]+ s)")))
      << r.out;
  for (const char* f : {"config.json", "metrics.csv", "summary.json", "checkpoint.bin", "report.html"}) {
    EXPECT_TRUE(fs::exists(path("run/") + f)) << f;
  }
  const Json s = read(path("run/summary.json"));
  for (const char* key : {"test_accuracy", "test_loss", "train_seconds", "epochs", "samples_per_second"}) {
    EXPECT_TRUE(s.contains(key)) << key;
  }
  EXPECT_EQ(s["epochs"], 4);
  EXPECT_GE(s["test_accuracy"].get<double>(), 0.9);  // the classes are separable
  EXPECT_NEAR(std::stod(m[1]), s["test_accuracy"].get<double>(), 1e-4);
  EXPECT_GT(s["samples_per_second"].get<double>(), 0.0);
  EXPECT_EQ(RunFolder(path("run")).read_metrics().size(), 4u);
  EXPECT_EQ(parse_config(read(path("run/config.json"))).name, "tiny");
  std::ifstream html(path("run/report.html"));
  const std::string report((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
  EXPECT_NE(report.find("<svg"), std::string::npos);
  EXPECT_NE(report.find("data-series=\"validation accuracy\""), std::string::npos);
  EXPECT_EQ(report.find("http"), std::string::npos);
  // Finished: the headline's test accuracy, and the confusion matrix of the 3 classes.
  char accuracy[32];
  std::snprintf(accuracy, sizeof accuracy, ">%.2f%%<", 100 * s["test_accuracy"].get<double>());
  EXPECT_NE(report.find(accuracy), std::string::npos) << accuracy;
  EXPECT_NE(report.find("<th scope=\"col\">2</th><th scope=\"col\">samples</th>"), std::string::npos);

  // evaluate: the checkpoint alone (copied away from its folder) gives the same numbers.
  fs::copy_file(path("run/checkpoint.bin"), path("moved.bin"), fs::copy_options::overwrite_existing);
  const Result e = run_cmd({"evaluate", "--checkpoint", path("moved.bin"), "--json"});
  ASSERT_EQ(e.rc, 0) << e.err;
  const Json ej = Json::parse(e.out);
  EXPECT_DOUBLE_EQ(ej["test_accuracy"].get<double>(), s["test_accuracy"].get<double>());
  EXPECT_NEAR(ej["test_loss"].get<double>(), s["test_loss"].get<double>(), 1e-6);
  EXPECT_EQ(ej["samples"], 60);

  // predict from CSV (raw pixels, with a header line) and from the IDX file.
  {
    std::ofstream csv(path("inputs.csv"));
    csv << "pixels\n";
    for (int i = 0; i < 10; ++i) {
      for (int j = 0; j < kSide * kSide; ++j) csv << (j ? "," : "") << test_images_[i][j];
      csv << "\n";
    }
  }
  const Result p = run_cmd({"predict", "--checkpoint", path("run/checkpoint.bin"), "--input", path("inputs.csv")});
  ASSERT_EQ(p.rc, 0) << p.err;
  std::istringstream lines(p.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "index,class,p0,p1,p2");
  int rows = 0, right = 0;
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string c; std::getline(ls, c, ',');) f.push_back(c);
    ASSERT_EQ(f.size(), 5u) << line;
    EXPECT_EQ(std::stoi(f[0]), rows);
    const double total = std::stod(f[2]) + std::stod(f[3]) + std::stod(f[4]);
    EXPECT_NEAR(total, 1.0, 1e-4);  // softmax probabilities
    right += std::stoi(f[1]) == test_labels_[rows];
    ++rows;
  }
  EXPECT_EQ(rows, 10);
  EXPECT_GE(right, 8);
  const Result q = run_cmd({"predict", "--checkpoint", path("run/checkpoint.bin"), "--input",
                        path("data/t10k-images-idx3-ubyte.gz"), "--output", path("pred.csv")});
  ASSERT_EQ(q.rc, 0) << q.err;
  std::ifstream pred(path("pred.csv"));
  int n = 0;
  while (std::getline(pred, line)) ++n;
  EXPECT_EQ(n, 61);
}

TEST_F(CliEndToEnd, ProfileAndMemoryReport) {
  const Result r = run_cmd({"train", "--config", path("tiny.json"), "--out", path("prof"), "--overwrite", "--quiet",
                        "--profile"});
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* word : {"profile of", "forward", "backward", "optimizer", "total profiled", "training time"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word << " missing from\n" << r.out;
  }
  const Json mem = read(path("prof/summary.json"))["memory"];
  for (const char* key : {"dataset_bytes", "parameter_bytes", "gradient_bytes", "peak_rss_bytes"}) {
    EXPECT_GT(mem[key].get<double>(), 0.0) << key;
  }
  EXPECT_EQ(mem["parameter_bytes"], mem["gradient_bytes"]);
  EXPECT_GT(mem["peak_rss_over_needed"].get<double>(), 0.0);
}

// --precision bf16 trains on any CPU; where oneDNN has no bf16 matmul (no
// AVX-512) the operands are widened to float and the run says so, and only
// there (a CUDA device would compute bf16 itself).
TEST_F(CliEndToEnd, Bf16TrainsAndSaysWhenTheCpuWidensItsOperands) {
  const Result r = run_cmd({"train", "--config", path("tiny.json"), "--out", path("bf16"), "--overwrite",
                            "--precision", "bf16", "--epochs", "1"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const bool widened = !cpu::bf16_matmul_native() && !has_cuda_device();
  EXPECT_EQ(r.out.find("bf16 operands are widened to float") != std::string::npos, widened) << r.out;
  EXPECT_EQ(read(path("bf16/summary.json"))["precision"], "bf16");
}

TEST_F(CliEndToEnd, ResumeContinuesExactlyWhereTheRunStopped) {
  const std::string base = path("tiny.json");
  ASSERT_EQ(run_cmd({"train", "--config", base, "--out", path("full"), "--overwrite", "--quiet"}).rc, 0);
  const Result first = run_cmd({"train", "--config", base, "--epochs", "2", "--out", path("part"), "--overwrite"});
  ASSERT_EQ(first.rc, 0) << first.err;
  EXPECT_EQ(RunFolder(path("part")).read_metrics().size(), 2u);
  const Result second = run_cmd({"train", "--out", path("part"), "--resume", "--epochs", "4"});
  ASSERT_EQ(second.rc, 0) << second.err;
  EXPECT_NE(second.out.find("(resuming)"), std::string::npos);
  EXPECT_EQ(second.out.find("epoch 1/4"), std::string::npos);  // epochs 1-2 are not trained again
  EXPECT_NE(second.out.find("epoch 3/4"), std::string::npos);

  const model::History full = RunFolder(path("full")).read_metrics();
  const model::History resumed = RunFolder(path("part")).read_metrics();
  ASSERT_EQ(resumed.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(resumed[i].epoch, i + 1);
    EXPECT_DOUBLE_EQ(resumed[i].train_loss, full[i].train_loss) << "epoch " << i + 1;
    EXPECT_DOUBLE_EQ(resumed[i].val_accuracy, full[i].val_accuracy) << "epoch " << i + 1;
  }
  EXPECT_DOUBLE_EQ(read(path("part/summary.json"))["test_loss"].get<double>(),
                   read(path("full/summary.json"))["test_loss"].get<double>());
}

// Every optimizer kind, built by optimizer::make from the config: the
// checkpoint records the kind and the settings the run used, and --resume
// continues exactly as the uninterrupted run.
TEST_F(CliEndToEnd, EveryOptimizerResumesExactlyAndIsRecordedInTheCheckpoint) {
  for (const std::string& kind : optimizer::kind_names()) {
    SCOPED_TRACE(kind);
    Json cfg = read(path("tiny.json"));
    cfg["optimizer"] = {{"type", kind}, {"learning_rate", kind == "sgd" ? 0.1 : 0.01}, {"beta1", 0.8},
                        {"rho", 0.5}, {"weight_decay", 1e-4}, {"epsilon", 1e-7}};
    if (kind == "sgd") cfg["optimizer"]["momentum"] = 0.5;
    cfg["epochs"] = 3;
    const std::string file = path("opt-" + kind + ".json"), full = path("opt-full-" + kind),
                      part = path("opt-part-" + kind);
    std::ofstream(file) << cfg.dump();
    ASSERT_EQ(run_cmd({"train", "--config", file, "--out", full, "--overwrite", "--quiet"}).rc, 0);
    ASSERT_EQ(run_cmd({"train", "--config", file, "--epochs", "1", "--out", part, "--overwrite", "--quiet"}).rc, 0);
    const Result resumed = run_cmd({"train", "--out", part, "--resume", "--epochs", "3", "--quiet"});
    ASSERT_EQ(resumed.rc, 0) << resumed.err;
    const model::History a = RunFolder(full).read_metrics(), b = RunFolder(part).read_metrics();
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(b.size(), 3u);
    for (std::size_t e = 0; e < 3; ++e) {
      EXPECT_EQ(a[e].train_loss, b[e].train_loss) << "epoch " << e + 1;
      EXPECT_EQ(a[e].val_loss, b[e].val_loss) << "epoch " << e + 1;
    }
    const io::Checkpoint ck = io::read_checkpoint(part + "/checkpoint.bin");
    EXPECT_EQ(ck.get("optimizer.kind"), kind);
    EXPECT_EQ(ck.get_double("optimizer.beta1"), 0.8);
    EXPECT_EQ(ck.get_double("optimizer.rho"), 0.5);
    EXPECT_EQ(ck.get_double("optimizer.epsilon"), 1e-7);
    EXPECT_EQ(ck.get_double("optimizer.momentum"), kind == "sgd" ? 0.5 : 0.0);
  }
}

// The large-batch keys through the command: LARS, the rate scaled and
// warmed up, the batch growing every epoch; a run stopped after epoch 1 and
// resumed continues in the grown batches exactly as the uninterrupted run,
// and the config written to the run folder keeps every key.
TEST_F(CliEndToEnd, LargeBatchRecipesResumeExactly) {
  Json cfg = read(path("tiny.json"));
  cfg["optimizer"] = {{"type", "lars"}, {"learning_rate", 1.0}, {"momentum", 0.9}, {"exclude_vectors", true}};
  cfg["schedule"] = {{"lr_scaling", "linear"}, {"base_batch", 10}, {"warmup_epochs", 1}};
  cfg["batch_growth"] = {{"factor", 2}, {"every_epochs", 1}, {"max", 80}};
  cfg["epochs"] = 3;
  std::ofstream(path("large-batch.json")) << cfg.dump();
  ASSERT_EQ(run_cmd({"train", "--config", path("large-batch.json"), "--out", path("lb-full"), "--overwrite",
                     "--quiet"}).rc, 0);
  ASSERT_EQ(run_cmd({"train", "--config", path("large-batch.json"), "--epochs", "1", "--out", path("lb-part"),
                     "--overwrite", "--quiet"}).rc, 0);
  const Result resumed = run_cmd({"train", "--out", path("lb-part"), "--resume", "--epochs", "3", "--quiet"});
  ASSERT_EQ(resumed.rc, 0) << resumed.err;
  const model::History a = RunFolder(path("lb-full")).read_metrics(), b = RunFolder(path("lb-part")).read_metrics();
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (std::size_t e = 0; e < 3; ++e) {
    EXPECT_EQ(a[e].train_loss, b[e].train_loss) << "epoch " << e + 1;
    EXPECT_EQ(a[e].learning_rate, b[e].learning_rate) << "epoch " << e + 1;
  }
  const io::Checkpoint ck = io::read_checkpoint(path("lb-full/checkpoint.bin"));
  EXPECT_EQ(ck.get("optimizer.kind"), "lars");
  EXPECT_EQ(ck.get_uint("train.batch_size"), 80u);  // epoch 3 trained in batches of 20 x 2 x 2
  const Json stored = read(path("lb-full/config.json"));
  EXPECT_EQ(stored["batch_growth"]["max"], 80);
  EXPECT_EQ(stored["schedule"]["lr_scaling"], "linear");
  EXPECT_EQ(stored["optimizer"]["exclude_vectors"], true);
}

TEST_F(CliEndToEnd, ConvolutionConfigTrains) {
  Json cfg = read(path("tiny.json"));
  cfg["layers"] = Json::array({{{"type", "conv2d"}, {"filters", 4}, {"kernel", 3}, {"padding", 1}, {"activation", "relu"}},
                               {{"type", "pool"}, {"mode", "max"}, {"kernel", 2}},
                               {{"type", "flatten"}},
                               {{"type", "dense"}, {"units", kClasses}, {"activation", "softmax"}}});
  cfg["epochs"] = 2;
  std::ofstream(path("conv.json")) << cfg.dump();
  const Result r = run_cmd({"train", "--config", path("conv.json"), "--out", path("conv"), "--overwrite", "--quiet"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find("epoch"), std::string::npos);  // --quiet: only the result line
  EXPECT_EQ(r.out.rfind("test accuracy: ", 0), 0u) << r.out;
  EXPECT_GE(read(path("conv/summary.json"))["test_accuracy"].get<double>(), 0.8);
}

// A graph network on synthetic data: the output, summary.json and the
// report all say the data was synthetic; a 224 x 224 preset given 8 x 8
// images is refused before training, naming its input layer.
TEST_F(CliEndToEnd, SyntheticDataIsLabelledWhereverResultsAreShown) {
  Json cfg = read(path("tiny.json"));
  cfg["layers"] = Json::array({{{"type", "conv2d"}, {"name", "a"}, {"filters", 4}, {"kernel", 3}, {"padding", 1}},
                               {{"type", "conv2d"}, {"name", "b"}, {"inputs", {"input"}}, {"filters", 4}, {"kernel", 1}},
                               {{"type", "add"}, {"inputs", {"a", "b"}}, {"activation", "relu"}},
                               {{"type", "flatten"}},
                               {{"type", "dense"}, {"units", kClasses}, {"activation", "softmax"}}});
  cfg["data"] = {{"dataset", "synthetic"}, {"shape", {1, kSide, kSide}}, {"classes", kClasses},
                 {"train_samples", 40}, {"test_samples", 10}};
  cfg["epochs"] = 1;
  std::ofstream(path("synthetic.json")) << cfg.dump();
  const Result r = run_cmd({"train", "--config", path("synthetic.json"), "--out", path("synthetic"), "--overwrite"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("from synthetic data (seeded random images)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" (synthetic data)\n"), std::string::npos) << r.out;
  const Json summary = read(path("synthetic/summary.json"));
  EXPECT_EQ(summary["dataset"], "synthetic");
  EXPECT_EQ(summary["synthetic_data"], true);
  std::ifstream page(path("synthetic/report.html"));
  const std::string html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("synthetic data (seeded random images and labels"), std::string::npos);

  Json r50 = run::preset("resnet50");
  r50["data"] = {{"dataset", "idx"}, {"dir", root_ + "/data"}};
  std::ofstream(path("r50.json")) << r50.dump();
  const Result refused = run_cmd({"train", "--config", path("r50.json"), "--out", path("r50"), "--overwrite", "--quiet"});
  EXPECT_NE(refused.rc, 0) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("layers[0].shape: the network takes samples of [3,224,224], but the data's are [1,8,8]"),
            std::string::npos)
      << refused.err;
}

#if MAGMADNN_HAVE_IMAGES
// An image folder through `magmadnn train` and `magmadnn evaluate`: the
// output names the folders, the bad file skipped and the decode threads;
// summary.json keeps them; the checkpoint scores the test folder again.
TEST_F(CliEndToEnd, AnImageFolderTrainsAndEvaluates) {
  for (const char* split : {"train", "test"}) {
    for (int c = 0; c < 2; ++c) {
      const fs::path cls = fs::path(path("images")) / split / ("c" + std::to_string(c));
      fs::create_directories(cls);
      for (int i = 0; i < (std::string(split) == "train" ? 10 : 3); ++i)
        test::write_jpeg((cls / (std::to_string(i) + ".jpg")).string(), 14, 12, 3, test::pattern(14, 12, 3, 50 * c + i));
    }
  }
  test::write_text(path("images/train/c1/notes.txt"), "not an image");
  Json cfg = read(path("tiny.json"));
  cfg["layers"].back()["units"] = 2;
  cfg["epochs"] = 1;
  cfg["data"] = {{"dataset", "folder"}, {"train", path("images/train")}, {"test", path("images/test")},
                 {"shape", {1, 8, 8}}, {"val_split", 0.2}};
  std::ofstream(path("folder.json")) << cfg.dump();
  const Result r = run_cmd({"train", "--config", path("folder.json"), "--out", path("folder"), "--overwrite"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("from " + path("images/train") + " and " + path("images/test")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped " + path("images/train/c1/notes.txt") + ": not a .jpg, .jpeg or .png file"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(train): 20 images of 2 classes, 1 bad files skipped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decode thread"), std::string::npos) << r.out;
  const Json summary = read(path("folder/summary.json"));
  EXPECT_EQ(summary["dataset"], "folder");
  EXPECT_EQ(summary["image_folder"]["test"]["images"], 6);
  EXPECT_EQ(summary["image_folder"]["train"]["skipped_files"], 1);
  const Result e = run_cmd({"evaluate", "--checkpoint", path("folder/checkpoint.bin"), "--json"});
  ASSERT_EQ(e.rc, 0) << e.err;
  EXPECT_EQ(Json::parse(e.out)["samples"], 6);
  EXPECT_EQ(Json::parse(e.out)["test_loss"].get<double>(), summary["test_loss"].get<double>());
}
#endif

TEST_F(CliEndToEnd, MistakesExitWithTwoAndNameTheProblem) {
  Result r = run_cmd({"train", "--epochz", "3"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "magmadnn: error: magmadnn train: unknown option --epochz (see magmadnn train --help)\n");
  r = run_cmd({"train", "--epochs", "three"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--epochs: expected an integer in [1, 1000000], got \"three\""), std::string::npos) << r.err;
  r = run_cmd({"train", "--preset", "lenet5", "--layers", "2", "--print-config"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--layers applies to the mlp preset only"), std::string::npos) << r.err;

  Json bad = read(path("tiny.json"));
  bad["layers"][1]["units"] = "abc";
  std::ofstream(path("bad.json")) << bad.dump();
  r = run_cmd({"train", "--config", path("bad.json")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "magmadnn: error: layers[1].units: expected an integer in [1, 1048576], got \"abc\"\n");

  Json wrong = read(path("tiny.json"));
  wrong["layers"][2]["units"] = 10;  // the data has 3 classes
  std::ofstream(path("wrong.json")) << wrong.dump();
  r = run_cmd({"train", "--config", path("wrong.json"), "--out", path("wrong"), "--quiet"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("data has 3 classes"), std::string::npos) << r.err;

  r = run_cmd({"train", "--out", path("nothing-here"), "--resume"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("nothing to resume"), std::string::npos) << r.err;
  r = run_cmd({"train", "--config", path("tiny.json"), "--data", path("no-such-dir"), "--out", path("x"), "--quiet"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("dataset-fashion-mnist"), std::string::npos) << r.err;
  r = run_cmd({"evaluate"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--checkpoint FILE is required"), std::string::npos);
  r = run_cmd({"frobnicate"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("unknown command \"frobnicate\""), std::string::npos);
}

// Every integer flag has a range and is refused past it, naming the flag:
// nothing is truncated on the way to the code (--epochs 4294967296 trained 0
// epochs; --threads 100000 crashed).
TEST_F(CliEndToEnd, IntegerFlagsAreRangeChecked) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"train", "--epochs", "4294967296"}, "--epochs: expected an integer in [1, 1000000], got \"4294967296\""},
      {{"train", "--epochs", "99999999999999999999"},
       "--epochs: expected an integer in [1, 1000000], got \"99999999999999999999\""},
      {{"train", "--batch-size", "4294967296"},
       "--batch-size: expected an integer in [1, 2147483647], got \"4294967296\""},
      {{"train", "--limit-train", "4294967296"},
       "--limit-train: expected an integer in [1, 2147483647], got \"4294967296\""},
      {{"train", "--early-stopping", "4294967296"},
       "--early-stopping: expected an integer in [0, 1000000], got \"4294967296\""},
      {{"train", "--layers", "100000"}, "--layers: expected an integer in [1, 1000], got \"100000\""},
      {{"train", "--threads", "100000"}, "--threads: expected an integer in [1, "},
      {{"evaluate", "--checkpoint", "x", "--limit-test", "4294967296"},
       "--limit-test: expected an integer in [1, 2147483647], got \"4294967296\""},
      {{"bench", "conv", "--repeats", "4294967296"}, "--repeats: expected an integer in [1, 1000000]"},
  };
  for (const auto& [args, want] : cases) {
    std::vector<std::string> full = args;
    if (args[0] == "train" && args[1] != "--layers") {
      for (const char* x : {"--config", "", "--out", "", "--quiet"}) full.push_back(x);
      full[full.size() - 4] = path("tiny.json");
      full[full.size() - 2] = path("range");
    }
    const Result r = run_cmd(full);
    EXPECT_EQ(r.rc, 2) << args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(path("range")));
  const Result r = run_cmd({"train", "--threads", "100000", "--print-config"});  // checked before anything else
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--threads: expected an integer in [1, "), std::string::npos) << r.err;
}

// The config's mistakes are ours to word: a run name that leaves runs/, a
// document that is not an object, a number beyond a double, a directory.
TEST_F(CliEndToEnd, ConfigFileMistakesExitWithTwoInOurWords) {
  Json escape = read(path("tiny.json"));
  escape["name"] = "../../../x";
  std::ofstream(path("escape.json")) << escape.dump();
  Result r = run_cmd({"train", "--config", path("escape.json"), "--quiet"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "magmadnn: error: name: expected 1 to 100 letters, digits, '-', '_' or '.' (not starting with "
                   "'.'), got \"../../../x\"\n");
  std::ofstream(path("array.json")) << "[]";
  r = run_cmd({"train", "--config", path("array.json"), "--epochs", "2", "--quiet"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "magmadnn: error: config: expected an object in " + path("array.json") + ", got []\n");
  std::ofstream(path("huge.json")) << R"({"epochs": 1e999})";
  r = run_cmd({"train", "--config", path("huge.json"), "--quiet"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "magmadnn: error: config: invalid JSON in " + path("huge.json") +
                       ": epochs (line 1, column 12): number out of range\n");
  r = run_cmd({"train", "--config", path("data"), "--quiet"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "magmadnn: error: config: config file " + path("data") + " is a directory, not a JSON file\n");
}

// Data that is not what the network is built for is refused with the file
// and both shapes: never reinterpreted because the pixel count agrees.
TEST_F(CliEndToEnd, DataOfTheWrongShapeTypeOrSizeIsRefusedNamingTheFile) {
  auto images = [](const std::string& file, io::IdxType type, std::vector<std::int64_t> shape, double value) {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    io::write_idx(file, type, shape, std::vector<double>(static_cast<std::size_t>(n), value), false);
  };
  auto labels = [](const std::string& file, std::int64_t n, double label) {
    io::write_idx(file, io::IdxType::u8, {n}, std::vector<double>(static_cast<std::size_t>(n), label), false);
  };
  auto train = [&](const std::string& dir, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"train", "--config", path("tiny.json"), "--data", path(dir), "--out",
                                     path("bad-" + dir), "--overwrite", "--quiet", "--epochs", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cmd(args);
  };
  // Test images of 4x16 against training images of 8x8: same pixel count.
  fs::create_directories(path("reshaped"));
  write_split(path("reshaped"), "train", 60, 1);
  images(path("reshaped/t10k-images-idx3-ubyte"), io::IdxType::u8, {5, 4, 16}, 10);
  labels(path("reshaped/t10k-labels-idx1-ubyte"), 5, 1);
  Result r = train("reshaped");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(path("reshaped/t10k-images-idx3-ubyte") + ": images of shape {1, 4, 16}, but the training " +
                       "images (" + path("reshaped/train-images-idx3-ubyte.gz") + ") are {1, 8, 8}"),
            std::string::npos)
      << r.err;
  // A training set of no images names the training file (it used to be
  // reported as a bad label of the test set).
  fs::create_directories(path("emptytrain"));
  write_split(path("emptytrain"), "t10k", 20, 2);
  images(path("emptytrain/train-images-idx3-ubyte"), io::IdxType::u8, {0, 8, 8}, 0);
  labels(path("emptytrain/train-labels-idx1-ubyte"), 0, 0);
  r = train("emptytrain");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(path("emptytrain/train-images-idx3-ubyte") + " holds no images"), std::string::npos) << r.err;
  // Images of width 0.
  fs::create_directories(path("flat"));
  images(path("flat/train-images-idx3-ubyte"), io::IdxType::u8, {4, 8, 0}, 0);
  labels(path("flat/train-labels-idx1-ubyte"), 4, 0);
  write_split(path("flat"), "t10k", 20, 2);
  r = train("flat");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(path("flat/train-images-idx3-ubyte") + ": images of 8x0 pixels"), std::string::npos)
      << r.err;

  // Predict: the network's shape {1, 8, 8} and its element type.
  ASSERT_EQ(run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", path("shape-run"), "--overwrite",
                     "--quiet"})
                .rc,
            0);
  const std::string ckpt = path("shape-run/checkpoint.bin");
  auto predict = [&](const std::string& input) { return run_cmd({"predict", "--checkpoint", ckpt, "--input", input}); };
  images(path("p-4x16"), io::IdxType::u8, {2, 4, 16}, 3);
  r = predict(path("p-4x16"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(path("p-4x16") + ": shape {2, 4, 16} does not hold samples of the network's input {1, 8, 8}"),
            std::string::npos)
      << r.err;
  images(path("p-empty"), io::IdxType::u8, {0, 8, 8}, 0);
  r = predict(path("p-empty"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(path("p-empty") + ": no samples"), std::string::npos) << r.err;
  images(path("p-i8"), io::IdxType::i8, {2, 8, 8}, 3);
  r = predict(path("p-i8"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(path("p-i8") + ": IDX int8 pixels; expected uint8"), std::string::npos) << r.err;
  images(path("p-f32"), io::IdxType::f32, {2, 8, 8}, 300);
  r = predict(path("p-f32"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(path("p-f32") + ": value 300 of sample 0 (element 0) is not a pixel value in [0, 255]"),
            std::string::npos)
      << r.err;
  images(path("p-f32ok"), io::IdxType::f32, {2, 8, 8}, 255);
  images(path("p-u8"), io::IdxType::u8, {2, 8, 8}, 255);
  const Result f = predict(path("p-f32ok")), u = predict(path("p-u8"));
  ASSERT_EQ(f.rc, 0) << f.err;
  EXPECT_EQ(f.out, u.out);  // float pixel values are raw values, like uint8
  {
    std::ofstream csv(path("p-bad.csv"));
    for (int row = 0; row < 2; ++row) {
      for (int c = 0; c < 64; ++c) csv << (c ? "," : "") << (row == 1 && c == 5 ? "nan" : "7");
      csv << "\n\n";
    }
  }
  r = predict(path("p-bad.csv"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(path("p-bad.csv") + ":3: column 6: nan is not a pixel value in [0, 255]"), std::string::npos)
      << r.err;
  // evaluate's test images must be the network's shape too.
  r = run_cmd({"evaluate", "--checkpoint", ckpt, "--data", path("reshaped")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("images of shape {1, 4, 16}, but the network's input is {1, 8, 8}"), std::string::npos)
      << r.err;
}

// Fashion-MNIST and MNIST have 10 classes: a label of 200 is a bad label,
// named with its file and position, not a data set of 201 classes.
TEST_F(CliEndToEnd, ALabelOutsideTheDataSetsClassesNamesTheFile) {
  fs::create_directories(path("label200"));
  write_split(path("label200"), "train", 30, 1);
  write_split(path("label200"), "t10k", 10, 2);
  std::vector<double> labels(30, 1);
  labels[7] = 200;
  io::write_idx(path("label200/train-labels-idx1-ubyte"), io::IdxType::u8, {30}, labels, false);
  const Result r = run_cmd({"train", "--data", path("label200"), "--out", path("label200-run"), "--quiet"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(path("label200/train-labels-idx1-ubyte") + ": label 200 of image 7 (offset 15) is outside [0, 10)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("201 classes"), std::string::npos) << r.err;  // not "201": the temp path holds the pid
  EXPECT_EQ(r.err.find("units"), std::string::npos) << r.err;
}

// A checkpoint with a valid CRC can still lie: NaN weights (evaluate used
// to print "loss nan" and exit 0), a cursor past the end of the epoch
// (--resume recorded the epoch as done without training it), a history that
// disagrees with the epoch count. Loading refuses each, naming the file.
TEST_F(CliEndToEnd, CraftedCheckpointsAreRefusedOnLoad) {
  ASSERT_EQ(run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", path("craft"), "--overwrite",
                     "--quiet"})
                .rc,
            0);
  const std::string good = path("craft/checkpoint.bin");
  const io::Checkpoint ck = io::read_checkpoint(good);
  io::TensorRecord param;
  for (const auto& rec : ck.tensors()) {
    if (rec.name.rfind("param/", 0) == 0) {
      param = rec;
      break;
    }
  }
  ASSERT_FALSE(param.name.empty());
  // NaN in one weight, the CRC recomputed by write_checkpoint.
  io::Checkpoint nan;
  for (const auto& [k, v] : ck.meta()) nan.set(k, v);
  for (const auto& rec : ck.tensors()) {
    io::TensorRecord r = rec;
    if (r.name == param.name) {
      ASSERT_EQ(r.type, dtype::f32);
      const float q = std::nanf("");
      std::memcpy(r.data.data() + sizeof(float), &q, sizeof q);
    }
    nan.add_record(r);
  }
  fs::create_directories(path("craft-nan"));
  io::write_checkpoint(path("craft-nan/checkpoint.bin"), nan);
  const std::string want = "tensor '" + param.name + "' ";
  Result r = run_cmd({"evaluate", "--checkpoint", path("craft-nan/checkpoint.bin")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("holds nan at element 1"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  write_split(path("craft"), "p", 3, 9);
  r = run_cmd({"predict", "--checkpoint", path("craft-nan/checkpoint.bin"), "--input",
               path("craft/p-images-idx3-ubyte.gz")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(want), std::string::npos) << r.err;

  // Finite weights whose loss is not: evaluate must not exit 0 on it.
  io::Checkpoint huge;
  for (const auto& [k, v] : ck.meta()) huge.set(k, v);
  for (const auto& rec : ck.tensors()) {
    io::TensorRecord h = rec;
    if (h.name.rfind("param/", 0) == 0) {
      const float big = 3e38f;
      for (std::size_t i = 0; i + sizeof(float) <= h.data.size(); i += sizeof(float)) {
        std::memcpy(h.data.data() + i, &big, sizeof big);
      }
    }
    huge.add_record(h);
  }
  fs::create_directories(path("craft-huge"));
  io::write_checkpoint(path("craft-huge/checkpoint.bin"), huge);
  r = run_cmd({"evaluate", "--checkpoint", path("craft-huge/checkpoint.bin")});
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.err.find("the loss of " + path("craft-huge/checkpoint.bin") + " on the 60 test samples"),
            std::string::npos)
      << r.err;

  // The cursor: batch 1000000 of an epoch of 11 batches (216 samples / 20).
  fs::create_directories(path("craft-batch"));
  fs::copy_file(path("craft/config.json"), path("craft-batch/config.json"));
  io::Checkpoint far = ck;
  far.set_int("train.batch", 1000000);
  io::write_checkpoint(path("craft-batch/checkpoint.bin"), far);
  r = run_cmd({"train", "--out", path("craft-batch"), "--resume", "--epochs", "2", "--quiet"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("cursor at batch 1000000 of epoch 2, but an epoch over "), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("craft-batch/metrics.csv")) &&
               RunFolder(path("craft-batch")).read_metrics().size() > 1);
  // One epoch done, no record of it.
  io::Checkpoint lost = ck;
  lost.set_uint("history.count", 0);
  io::write_checkpoint(path("craft-batch/checkpoint.bin"), lost);
  r = run_cmd({"evaluate", "--checkpoint", path("craft-batch/checkpoint.bin")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("1 epochs done but 0 records in its history"), std::string::npos) << r.err;
}

TEST_F(CliEndToEnd, RefusesToMixTwoRunsInOneFolder) {
  ASSERT_EQ(run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", path("once"), "--overwrite",
                 "--quiet"})
                .rc,
            0);
  const Result r = run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", path("once"), "--quiet"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("already holds a run"), std::string::npos) << r.err;
}

TEST_F(CliEndToEnd, StrategyAndWatchdogFlagsSetTheDistributedSection) {
  Result r = run_cmd({"train", "--strategy", "ring", "--watchdog", "7.5", "--print-config"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const TrainSpec s = parse_config(Json::parse(r.out));
  EXPECT_EQ(s.distributed.strategy, "ring");
  EXPECT_DOUBLE_EQ(s.distributed.watchdog_s, 7.5);
  r = run_cmd({"train", "--strategy", "horovod", "--print-config"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("distributed.strategy: expected one of"), std::string::npos) << r.err;
  r = run_cmd({"train", "--watchdog", "0", "--print-config"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--watchdog"), std::string::npos) << r.err;
}

// The setting flags, their ranges and their resume rules come from the run
// spec's field table (run/spec_fields.h), which --print-schema prints.
TEST_F(CliEndToEnd, PrintSchemaAndTheResumeRulesFollowTheFieldTable) {
  Result r = run_cmd({"train", "--print-schema"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const Json schema = Json::parse(r.out);
  std::map<std::string, Json> by_key;
  for (const Json& e : schema) by_key[e["key"].get<std::string>()] = e;
  EXPECT_EQ(by_key.at("distributed.watchdog_s")["flag"], "--watchdog SECONDS");
  EXPECT_EQ(by_key.at("distributed.watchdog_s")["accepts"], "a number in (0, 86400]");
  for (const auto& [key, e] : by_key) {
    if (!e.contains("flag")) continue;
    const std::string flag = e["flag"].get<std::string>();
    const std::string name = flag.substr(0, flag.find(' '));
    std::vector<std::string> args = {"train", "--out", path("no-such-run"), "--resume", name};
    if (flag.find(' ') != std::string::npos) args.push_back("1");
    r = run_cmd(args);
    EXPECT_EQ(r.rc, 2) << key << ": " << r.err;
    const bool refused = r.err.find(name + " cannot change it") != std::string::npos;
    EXPECT_EQ(refused, !e["resume_may_change"].get<bool>()) << key << ": " << r.err;
  }
}

TEST_F(CliEndToEnd, PrintConfigAndHelp) {
  Result r = run_cmd({"train", "--preset", "mlp", "--layers", "2", "--lr", "0.1", "--print-config"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const TrainSpec s = parse_config(Json::parse(r.out));
  EXPECT_EQ(s.layers.size(), 4u);
  EXPECT_DOUBLE_EQ(s.optimizer.learning_rate, 0.1);
  for (const char* cmd : {"train", "evaluate", "predict"}) {
    r = run_cmd({cmd, "--help"});
    EXPECT_EQ(r.rc, 0) << cmd;
    EXPECT_EQ(r.out.rfind(std::string("usage: magmadnn ") + cmd, 0), 0u) << r.out;
  }
  r = run_cmd({"train", "--help"});
  for (const char* opt : {"--config", "--preset", "--layers", "--epochs", "--batch-size", "--lr", "--seed", "--out",
                          "--data", "--resume", "--threads", "--limit-train", "--limit-test", "--quiet", "--profile",
                          "--strategy", "--watchdog", "--checkpoint-every", "--print-schema"}) {
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
  }
  r = run_cmd({"bench", "--help"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("magmadnn bench conv"), std::string::npos);
  r = run_cmd({"bench", "conv", "--list-layers"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("lenet_conv1"), std::string::npos) << r.out;
  r = run_cmd({"bench", "fft"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("unknown benchmark \"fft\" (available: conv, allreduce, --profile)"), std::string::npos) << r.err;
}

TEST_F(CliEndToEnd, BenchConvPrintsATableAndWritesJson) {
  const std::string json = root_ + "/bench.json";
  const Result r = run_cmd({"bench", "conv", "--cpu-only", "--layers", "lenet_conv1", "--batch", "2", "--repeats", "1",
                        "--json", json});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("layer", 0), 0u) << r.out;
  for (const char* pass : {"forward", "backward_data", "backward_filter"}) {
    EXPECT_TRUE(std::regex_search(r.out, std::regex(std::string("lenet_conv1 +") + pass + " +cpu .*\\*"))) << r.out;
  }
  EXPECT_NE(r.out.find("results written to " + json), std::string::npos) << r.out;
  std::ifstream in(json);
  const Json recs = Json::parse(in);
  ASSERT_TRUE(recs.is_array());
  ASSERT_FALSE(recs.empty());
  for (const Json& rec : recs) {
    EXPECT_EQ(rec.at("layer"), "lenet_conv1");
    EXPECT_GT(rec.at("seconds").get<double>(), 0.0);
    EXPECT_EQ(rec.contains("chosen"), rec.at("algorithm") == "auto") << rec.dump();
  }
}

// One process (no mpirun): the local communicator, no raw MPI figure; sizes
// that are not whole floats or carry an unknown unit are usage errors.
TEST_F(CliEndToEnd, BenchAllreduceOnOneProcessAndItsMistakes) {
  Result r = run_cmd({"bench", "allreduce", "--rounds", "1", "--bytes", "4K,8"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("over 1 rank, local communicator"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n +4096 +[0-9.]+ us +- "))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n +8 +[0-9.]+ us +- "))) << r.out;
  r = run_cmd({"bench", "allreduce", "--bytes", "4X"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--bytes: \"4X\" must be 1 byte to 1G"), std::string::npos) << r.err;
  r = run_cmd({"bench", "allreduce", "--bytes", "6"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("6 bytes is not a whole number of floats"), std::string::npos) << r.err;
}

namespace {
std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
}  // namespace

// A config.json (or any file of the names a run writes) that no run wrote is
// not replaced without --overwrite; the refusal names it.
TEST_F(CliEndToEnd, RefusesToReplaceAConfigJsonNotWrittenByARun) {
  fs::create_directories(path("mine"));
  std::ofstream(path("mine/config.json")) << "{\"my\": \"notes\"}\n";
  const Result r = run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", path("mine"), "--quiet"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find(path("mine/config.json")), std::string::npos) << r.err;
  EXPECT_EQ(file_bytes(path("mine/config.json")), "{\"my\": \"notes\"}\n");
  EXPECT_FALSE(fs::exists(path("mine/checkpoint.bin")));
}

// --overwrite keeps the old run (in DIR/.previous/) until the new one has its
// first checkpoint: a new run that fails at any write step before that leaves
// the old checkpoint in place, byte for byte; once it has one, the old run is
// gone and no .previous/ remains.
TEST_F(CliEndToEnd, OverwriteKeepsTheOldRunUntilTheNewOneHasACheckpoint) {
  const std::string dir = path("replace");
  ASSERT_EQ(run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", dir, "--overwrite", "--quiet"}).rc,
            0);
  std::string old_ckpt = file_bytes(dir + "/checkpoint.bin");
  const std::string old_config = file_bytes(dir + "/config.json");
  bool finished = false;
  int restored = 0;
  for (std::size_t k = 1; k < 80 && !finished; ++k) {
    io::detail::set_fault_after_writes(k);
    const Result r = run_cmd({"train", "--config", path("tiny.json"), "--epochs", "2", "--seed", "9", "--out", dir,
                              "--overwrite", "--quiet"});
    io::detail::set_fault_after_writes(0);
    EXPECT_FALSE(fs::exists(dir + "/.previous")) << "k=" << k;
    EXPECT_FALSE(fs::exists(dir + "/.previous.partial")) << "k=" << k;
    if (r.rc == 0) {
      finished = true;
      EXPECT_TRUE(file_bytes(dir + "/checkpoint.bin") != old_ckpt);
      break;
    }
    EXPECT_EQ(r.rc, 1) << r.err;
    EXPECT_NE(r.err.find("simulated fault"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(dir), std::string::npos) << r.err;  // names the file
    const Json cfg = read(dir + "/config.json");
    if (file_bytes(dir + "/checkpoint.bin") == old_ckpt) {
      EXPECT_TRUE(file_bytes(dir + "/config.json") == old_config) << "k=" << k;  // the old run, whole
      restored += r.out.find("restored") != std::string::npos;
    } else {
      EXPECT_EQ(cfg["seed"], 9) << "k=" << k;  // the new run's checkpoint with the new run's config
    }
    // whichever run is there continues
    for (const auto& e : fs::directory_iterator(dir)) {
      EXPECT_FALSE(io::is_temp_file_name(e.path().filename().string())) << "k=" << k << ": " << e.path();
    }
    const Result resumed = run_cmd({"evaluate", "--checkpoint", dir + "/checkpoint.bin", "--json"});
    EXPECT_EQ(resumed.rc, 0) << "k=" << k << ": " << resumed.err;
    // back to the old run for the next k
    ASSERT_EQ(run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", dir, "--overwrite", "--quiet"})
                  .rc,
              0);
    old_ckpt = file_bytes(dir + "/checkpoint.bin");
  }
  EXPECT_TRUE(finished);
  EXPECT_GE(restored, 8);  // the moves aside (one per file), config.json, the first checkpoint
}

// The first run after a killed one removes the temporary files the killed
// writer left (only names of the .NAME.tmp.PID.N pattern) and says how many bytes.
TEST_F(CliEndToEnd, TemporaryFilesOfAKilledRunAreRemovedByTheNextRun) {
  const std::string dir = path("killed");
  ASSERT_EQ(run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", dir, "--overwrite", "--quiet"}).rc,
            0);
  std::ofstream(dir + "/.checkpoint.bin.tmp.999999999.0") << std::string(1000, 'x');
  std::ofstream(dir + "/.metrics.csv.tmp.999999998.3") << std::string(234, 'y');
  for (const char* keep : {"notes.tmp.1.2", ".checkpoint.bin.tmp", ".checkpoint.bin.tmp.12x.1", "checkpoint.bin.bak"}) {
    std::ofstream(dir + "/" + keep) << "keep";
  }
  const Result r = run_cmd({"train", "--out", dir, "--resume", "--epochs", "2", "--quiet"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("removed 2 temporary files (.NAME.tmp.PID.N, 1234 bytes)"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/.checkpoint.bin.tmp.999999999.0"));
  EXPECT_FALSE(fs::exists(dir + "/.metrics.csv.tmp.999999998.3"));
  for (const char* keep : {"notes.tmp.1.2", ".checkpoint.bin.tmp", ".checkpoint.bin.tmp.12x.1", "checkpoint.bin.bak"}) {
    EXPECT_TRUE(fs::exists(dir + "/" + keep)) << keep;
  }
}

// predict --output onto its own --checkpoint or --input is refused, naming both.
TEST_F(CliEndToEnd, PredictRefusesToWriteOverItsOwnInputs) {
  const std::string dir = path("pred");
  ASSERT_EQ(run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", dir, "--overwrite", "--quiet"}).rc,
            0);
  const std::string ckpt = dir + "/checkpoint.bin", input = path("data/t10k-images-idx3-ubyte.gz");
  const std::string ckpt_bytes = file_bytes(ckpt), input_bytes = file_bytes(input);
  fs::create_symlink(ckpt, path("pred-link.bin"));
  for (const auto& [output, victim] : std::vector<std::pair<std::string, std::string>>{
           {ckpt, ckpt}, {dir + "/../pred/./checkpoint.bin", ckpt}, {path("pred-link.bin"), ckpt}, {input, input}}) {
    const Result r = run_cmd({"predict", "--checkpoint", ckpt, "--input", input, "--output", output});
    EXPECT_EQ(r.rc, 2) << output;
    EXPECT_NE(r.err.find(output), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(victim == ckpt ? "is the --checkpoint file " + ckpt : "is the --input file " + input),
              std::string::npos)
        << r.err;
  }
  EXPECT_TRUE(file_bytes(ckpt) == ckpt_bytes);
  EXPECT_TRUE(file_bytes(input) == input_bytes);
  EXPECT_EQ(run_cmd({"predict", "--checkpoint", ckpt, "--input", input, "--output", path("pred.csv")}).rc, 0);
}

// An --out where nothing can be written: exit 1 and a message naming it.
TEST_F(CliEndToEnd, UnwritableOutFolderIsNamed) {
  std::ofstream(path("a-file")) << "x";
  for (const std::string out : {path("a-file"), path("a-file/run"), std::string("/proc/magmadnn-run")}) {
    const Result r = run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", out, "--quiet"});
    EXPECT_EQ(r.rc, 1) << out << ": " << r.err;
    EXPECT_NE(r.err.find(out), std::string::npos) << r.err;
  }
}

// The disk fills up while the final report is written: exit 1 naming
// report.html, and the checkpoint written before it is intact.
TEST_F(CliEndToEnd, FailedReportWriteKeepsTheCheckpoint) {
  const std::string dir = path("full-disk");
  const std::size_t before = io::detail::write_steps();
  ASSERT_EQ(run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", dir, "--overwrite", "--quiet"}).rc,
            0);
  const std::size_t steps = io::detail::write_steps() - before;  // the last two: report.html's temp file and rename
  fs::remove_all(dir);
  io::detail::set_fault_after_writes(steps - 1);
  const Result r = run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", dir, "--quiet"});
  io::detail::set_fault_after_writes(0);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(dir + "/report.html"), std::string::npos) << r.err;
  EXPECT_EQ(run_cmd({"evaluate", "--checkpoint", dir + "/checkpoint.bin"}).rc, 0);
  EXPECT_TRUE(fs::exists(dir + "/summary.json"));
}

// While another process holds a run folder, `train` into it (new, --resume or
// --overwrite) is refused naming that process, and writes nothing there; the
// lock goes with its holder. (Two trainings started together into one new
// --out both succeeded, into a folder of one's config and the other's summary.)
TEST_F(CliEndToEnd, ASecondTrainIntoAFolderInUseIsRefusedNamingTheFirst) {
  const std::string dir = path("busy");
  ASSERT_EQ(run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", dir, "--quiet"}).rc, 0);
  EXPECT_FALSE(fs::exists(dir + "/.lock"));  // removed by its holder at the end
  const std::string config = file_bytes(dir + "/config.json"), ckpt = file_bytes(dir + "/checkpoint.bin");
  const std::string fresh = path("busy-new");
  fs::create_directories(fresh);
  {
    const FolderLock held(dir, "magmadnn train");
    const FolderLock held_fresh(fresh, "magmadnn train");
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"train", "--out", dir, "--resume", "--epochs", "2", "--quiet"},
          {"train", "--config", path("tiny.json"), "--epochs", "1", "--out", dir, "--overwrite", "--quiet"},
          {"train", "--config", path("tiny.json"), "--epochs", "1", "--out", fresh, "--quiet"}}) {
      const Result r = run_cmd(args);
      EXPECT_EQ(r.rc, 2) << args[3];
      EXPECT_NE(r.err.find(" is in use by process " + std::to_string(::getpid()) + " on host "), std::string::npos)
          << r.err;
      EXPECT_NE(r.err.find("(magmadnn train, since "), std::string::npos) << r.err;
    }
    EXPECT_TRUE(file_bytes(dir + "/config.json") == config);
    EXPECT_TRUE(file_bytes(dir + "/checkpoint.bin") == ckpt);
    EXPECT_FALSE(fs::exists(dir + "/.previous"));
    EXPECT_FALSE(fs::exists(fresh + "/config.json"));
  }
  EXPECT_EQ(run_cmd({"train", "--out", dir, "--resume", "--epochs", "2", "--quiet"}).rc, 0);
  EXPECT_EQ(run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", fresh, "--quiet"}).rc, 0);
  // A lock file left by a killed holder (its lock went with it) blocks nobody.
  std::ofstream(fresh + "/.lock") << "process 999999999 on host gone (magmadnn train, since then)\n";
  EXPECT_EQ(run_cmd({"train", "--out", fresh, "--resume", "--epochs", "2", "--quiet"}).rc, 0);
  EXPECT_FALSE(fs::exists(fresh + "/.lock"));
}

// A run refused at its start writes nothing into its folder: a new folder is
// not left behind, and a --resume refused when its checkpoint will not load
// leaves config.json as it was (it was rewritten first, and a refused first
// run left a config.json that made the corrected command "already hold a run").
TEST_F(CliEndToEnd, ARefusedRunLeavesTheFolderAsItFoundIt) {
  const std::string fresh = path("refused-new");
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--data", path("no-such-data")}, {"--lr", "-1"}, {"--threads", "0"}}) {
    std::vector<std::string> args{"train", "--config", path("tiny.json"), "--epochs", "1", "--out", fresh, "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = run_cmd(args);
    EXPECT_NE(r.rc, 0) << extra[0];
    EXPECT_FALSE(fs::exists(fresh)) << extra[0];
  }
  const std::string mine = path("refused-existing");
  fs::create_directories(mine);
  EXPECT_NE(run_cmd({"train", "--config", path("tiny.json"), "--out", mine, "--data", path("no-such-data"), "--quiet"}).rc,
            0);
  EXPECT_TRUE(fs::is_directory(mine));
  EXPECT_TRUE(fs::is_empty(mine));
  EXPECT_EQ(run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", fresh, "--quiet"}).rc, 0);

  const std::string dir = path("refused-resume");
  ASSERT_EQ(run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", dir, "--quiet"}).rc, 0);
  const std::string config = file_bytes(dir + "/config.json");
  std::ofstream(dir + "/checkpoint.bin", std::ios::binary | std::ios::trunc) << "not a checkpoint";
  const Result r = run_cmd({"train", "--out", dir, "--resume", "--epochs", "2", "--precision", "bf16", "--quiet"});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find(dir + "/checkpoint.bin"), std::string::npos) << r.err;
  EXPECT_TRUE(file_bytes(dir + "/config.json") == config);
}

// No command writes over one of its inputs or a file of a run or a search:
// `compare --out RUN/metrics.csv` replaced the run's metrics with its page.
TEST_F(CliEndToEnd, NoCommandWritesOverARunOrASearchOrItsInputs) {
  const std::string a = path("guard-a"), b = path("guard-b");
  for (const auto& d : {a, b})
    ASSERT_EQ(run_cmd({"train", "--config", path("tiny.json"), "--epochs", "1", "--out", d, "--quiet"}).rc, 0);
  std::map<std::string, std::string> before;
  for (const auto& d : {a, b})
    for (const auto& f : RunFolder::run_files())
      if (fs::exists(d + "/" + f)) before[d + "/" + f] = file_bytes(d + "/" + f);
  const std::string search = path("guard-search");
  fs::create_directories(search);
  std::ofstream(search + "/journal.jsonl") << "{\"event\":\"begin\"}\n";
  std::ofstream(search + "/report.html") << "the search's page";
  const std::string input = path("data/t10k-images-idx3-ubyte.gz");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"compare", a, b, "--out", a + "/metrics.csv"}, "is the metrics.csv of the training run in " + a},
      {{"compare", a, b, "--out", b + "/summary.json"}, "is the summary.json of the training run in " + b},
      {{"compare", a, "--out", b + "/report.html"}, "is the report.html of the training run in " + b},
      {{"compare", a, "--out", search + "/report.html"}, "is the report.html of the search in " + search},
      {{"compare", a, "--out", a}, "is the run folder " + a},
      {{"predict", "--checkpoint", a + "/checkpoint.bin", "--input", input, "--output", b + "/config.json"},
       "is the config.json of the training run in " + b},
      {{"bench", "conv", "--cpu-only", "--layers", "lenet_conv1", "--json", a + "/test_per_epoch.csv"},
       "is the test_per_epoch.csv of the training run in " + a},
      {{"train", "--config", path("tiny.json"), "--epochs", "1", "--out", search, "--quiet"},
       "--out " + search + " holds a search"},
  };
  for (const auto& [args, message] : cases) {
    const Result r = run_cmd(args);
    EXPECT_EQ(r.rc, 2) << args[0] << " " << args.back();
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  for (const auto& [file, bytes] : before) EXPECT_TRUE(file_bytes(file) == bytes) << file;
  EXPECT_EQ(file_bytes(search + "/report.html"), "the search's page");
  EXPECT_FALSE(fs::exists(search + "/config.json"));
  // A page beside the runs, or a new file inside a run's folder, is fine.
  EXPECT_EQ(run_cmd({"compare", a, b, "--out", path("guard.html")}).rc, 0);
  EXPECT_EQ(run_cmd({"compare", a, b, "--out", a + "/compare.html"}).rc, 0);
}

// --gpu-only where no GPU algorithm can run, and an empty --layers name, are
// refused (they printed an empty table, or timed every layer, with exit 0);
// a --json file that cannot be written is refused before the benchmark, with the reason.
TEST_F(CliEndToEnd, BenchConvRefusesWhatItCannotDoBeforeItStarts) {
  if (!has_cuda_device()) {
    const Result r = run_cmd({"bench", "conv", "--gpu-only", "--layers", "lenet_conv1", "--repeats", "1"});
    EXPECT_EQ(r.rc, 2);
    EXPECT_NE(r.err.find("--gpu-only: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("no GPU algorithm to time"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("lenet_conv1"), std::string::npos) << r.out;
  }
  for (const char* layers : {",", "lenet_conv1,", ",lenet_conv1", "lenet_conv1,,lenet_conv2", ""}) {
    const Result r = run_cmd({"bench", "conv", "--cpu-only", "--layers", layers, "--repeats", "1"});
    EXPECT_EQ(r.rc, 2) << layers;
    EXPECT_NE(r.err.find("has an empty name"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("lenet"), std::string::npos) << r.out;
  }
  fs::create_directories(path("a-folder"));
  for (const auto& [json, why] : std::vector<std::pair<std::string, std::string>>{
           {path("a-folder"), "is a folder"},
           {path("no-such-folder/b.json"), "does not exist"},
           {"/proc/self/bench.json", "cannot be written: creating a file in /proc/self fails: "}}) {
    const Result r = run_cmd({"bench", "conv", "--cpu-only", "--layers", "lenet_conv1", "--batch", "2", "--repeats",
                              "1", "--json", json});
    EXPECT_EQ(r.rc, 2) << json;
    EXPECT_NE(r.err.find("--json " + json), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("lenet_conv1"), std::string::npos) << "benchmarked before refusing: " << r.out;
  }
}

// --bytes takes the G its own bound is written in (1G was refused as "must be 1 byte to 1G").
TEST_F(CliEndToEnd, BenchAllreduceTakesItsUpperBoundInG) {
  const Result r = run_cmd({"bench", "allreduce", "--rounds", "1", "--bytes", "1G"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n *1073741824 +[0-9.]+ us"))) << r.out;
  for (const char* too_big : {"2G", "1025M", "1073741828"}) {
    const Result big = run_cmd({"bench", "allreduce", "--bytes", too_big});
    EXPECT_EQ(big.rc, 2) << too_big;
    EXPECT_NE(big.err.find("must be 1 byte to 1G (1073741824 bytes), with K, M or G"), std::string::npos) << big.err;
  }
}
