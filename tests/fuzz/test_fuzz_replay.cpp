// Feeds every file of every seed corpus (tests/fuzz/corpus/<target>/, crash
// reproducers included) through the same entry function the libFuzzer
// drivers use: each must be accepted or refused with a magmadnn::Error;
// another exception type fails the test, a crash fails the run.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_entries.h"

namespace {

namespace fs = std::filesystem;
using Entry = bool (*)(const std::uint8_t*, std::size_t);

struct Target {
  const char* name;
  Entry entry;
};
const Target kTargets[] = {{"idx", magmadnn::fuzz::idx},     {"gzip", magmadnn::fuzz::gzip},
                           {"csv", magmadnn::fuzz::csv},     {"cifar", magmadnn::fuzz::cifar},
                           {"checkpoint", magmadnn::fuzz::checkpoint}, {"config", magmadnn::fuzz::config},
                           {"tune_config", magmadnn::fuzz::tune_config}, {"journal", magmadnn::fuzz::journal},
#if defined(MAGMADNN_FUZZ_HAVE_CLI)
                           {"results", magmadnn::fuzz::results},   {"compare", magmadnn::fuzz::compare},
#endif
#if defined(MAGMADNN_FUZZ_HAVE_IMAGES)
                           {"image", magmadnn::fuzz::image},
#endif
};

std::vector<std::uint8_t> slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

class FuzzReplay : public ::testing::TestWithParam<Target> {
 public:
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(fs::path(magmadnn::fuzz::scratch_path("x")).parent_path(), ec);
  }
};

TEST_P(FuzzReplay, EveryCorpusFileIsAcceptedOrRefusedCleanly) {
  const fs::path dir = fs::path(MAGMADNN_FUZZ_CORPUS_DIR) / GetParam().name;
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 2u) << "seed corpus " << dir << " needs valid and invalid inputs";
  int accepted = 0;
  for (const fs::path& f : files) {
    const std::vector<std::uint8_t> bytes = slurp(f);
    try {
      accepted += GetParam().entry(bytes.data(), bytes.size()) ? 1 : 0;
    } catch (const std::exception& e) {
      ADD_FAILURE() << f << ": escaped as a non-magmadnn exception: " << e.what();
    }
  }
  // Each seed corpus holds at least one valid input, so the reader is reached.
  EXPECT_GE(accepted, 1) << dir;
}

INSTANTIATE_TEST_SUITE_P(Corpus, FuzzReplay, ::testing::ValuesIn(kTargets),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
