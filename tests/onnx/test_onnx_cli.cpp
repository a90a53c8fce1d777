// magmadnn export / import end to end, in process: a trained run exported,
// the file imported into a new run that trains one more epoch and exports
// again; both files pass ONNX's checker, and the command's errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli.h"
#include "magmadnn/onnx/onnx.h"
#include "support/run_fixtures.h"

namespace fs = std::filesystem;
using namespace magmadnn;

namespace {

struct Result {
  int rc;
  std::string out, err;
};

Result run_cmd(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int rc = cli::run_cli(args, out, err);
  return {rc, out.str(), err.str()};
}

}  // namespace

TEST(OnnxCli, ExportImportTrainExport) {
  const std::string root = ::testing::TempDir() + "/magmadnn_onnx_cli_" + std::to_string(::getpid());
  fs::remove_all(root);
  fs::create_directories(root + "/data");
  test::write_stripes(root + "/data", "train", 120, 1);
  test::write_stripes(root + "/data", "t10k", 30, 2);
  const cli::Json cfg = {{"layers", cli::Json::array({{{"type", "conv2d"}, {"filters", 2}, {"kernel", {3, 3}}},
                                            {{"type", "batchnorm"}},
                                            {{"type", "activation"}, {"function", "relu"}},
                                            {{"type", "flatten"}},
                                            {{"type", "dense"}, {"units", 3}, {"activation", "softmax"}}})},
                    {"optimizer", {{"type", "adam"}, {"learning_rate", 0.01}}},
                    {"epochs", 1},
                    {"batch_size", 20},
                    {"data", {{"dataset", "idx"}, {"dir", root + "/data"}}}};
  std::ofstream(root + "/cfg.json") << cfg.dump(2);
  ASSERT_EQ(run_cmd({"train", "--config", root + "/cfg.json", "--out", root + "/run", "--quiet"}).rc, 0);

  const Result ex = run_cmd({"export", root + "/run", "--onnx", root + "/a.onnx"});
  ASSERT_EQ(ex.rc, 0) << ex.err;
  EXPECT_NO_THROW(onnx::check_model_file(root + "/a.onnx"));

  const Result im = run_cmd({"import", root + "/a.onnx", "--out", root + "/imported", "--config", root + "/cfg.json",
                             "--epochs", "1"});
  ASSERT_EQ(im.rc, 0) << im.err;
  EXPECT_NE(im.out.find("after 1 epochs: test accuracy"), std::string::npos) << im.out;
  EXPECT_TRUE(fs::exists(root + "/imported/checkpoint.bin"));

  const Result again = run_cmd({"export", root + "/imported", "--onnx", root + "/b.onnx"});
  ASSERT_EQ(again.rc, 0) << again.err;
  EXPECT_NO_THROW(onnx::check_model_file(root + "/b.onnx"));

  // An existing run is not overwritten; a bad file leaves no folder behind.
  EXPECT_EQ(run_cmd({"import", root + "/a.onnx", "--out", root + "/imported"}).rc, 2);
  std::ofstream(root + "/bad.onnx") << "not a model";
  const Result bad = run_cmd({"import", root + "/bad.onnx", "--out", root + "/never"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("bad.onnx: not an ONNX model"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(root + "/never"));
  EXPECT_EQ(run_cmd({"export", root + "/run"}).rc, 2);  // no --onnx
}
