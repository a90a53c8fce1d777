// The entries of the command line's readers: results.json of a search and a
// run folder as `magmadnn compare` reads it (fuzz_entries.h). Built only with
// the command line (MAGMADNN_BUILD_APPS).
#include <filesystem>
#include <fstream>

#include "compare.h"
#include "fuzz_entries.h"
#include "magmadnn/core/errors.h"
#include "tune_results.h"

namespace magmadnn::fuzz {

namespace {

namespace fs = std::filesystem;

void write_bytes(const fs::path& path, const void* data, std::size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
}
void write_text(const fs::path& path, const std::string& text) { write_bytes(path, text.data(), text.size()); }

template <typename F>
bool guarded(F&& body) {
  try {
    body();
    return true;
  } catch (const Error&) {
    return false;
  }
}

// A valid run's files, each replaced by the input when the first byte picks it.
const char* const kRunFiles[] = {"metrics.csv", "summary.json", "test_per_epoch.csv", "config.json"};
const char* const kRunTexts[] = {
    "epoch,train_loss,train_accuracy,val_loss,val_accuracy,learning_rate,seconds,samples_per_second\n"
    "1,0.9,0.6,0.95,0.58,0.05,1.5,4000\n2,0.6,0.75,0.7,0.7,0.05,1.4,4100\n",
    R"({"test_accuracy": 0.8, "test_loss": 0.55, "train_seconds": 2.9, "epochs": 2, "samples_per_second": 4050,)"
    R"( "ranks": 2, "strategy": "allreduce", "global_batch": 64})",
    "epoch,test_loss,test_accuracy\n1,0.9,0.6\n2,0.6,0.75\n",
    R"({"data": {"dataset": "fashion_mnist"}, "batch_size": 32, "epochs": 2})"};

}  // namespace

bool results(const std::uint8_t* data, std::size_t size) {
  const fs::path path = scratch_path("results.json");
  write_bytes(path, data, size);
  return guarded([&] {
    const cli::TuneResults r = cli::read_tune_results(path);
    (void)r.best_trial();
    (void)r.minimize();
  });
}

bool compare(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return false;
  const unsigned pick = data[0] % 4;
  const fs::path dir = scratch_path("run");
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  for (unsigned k = 0; k < 4; ++k) {
    if (k == pick) write_bytes(dir / kRunFiles[k], data + 1, size - 1);
    else write_text(dir / kRunFiles[k], kRunTexts[k]);
  }
  return guarded([&] {
    const cli::CompareRun run = cli::read_compare_run(dir.string());
    const std::vector<cli::CompareRun> runs{run, run};
    cli::check_comparable(runs);
    (void)cli::run_label(run);
    (void)cli::render_compare(runs);
  });
}

}  // namespace magmadnn::fuzz
