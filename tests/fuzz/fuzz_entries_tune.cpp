// The entries of the search's readers: the tune config and the journal
// (fuzz_entries.h). Only the library is needed.
#include <filesystem>
#include <fstream>
#include <memory>

#include "fuzz_entries.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/tune/inline_channel.h"
#include "magmadnn/tune/journal.h"
#include "magmadnn/tune/master.h"
#include "magmadnn/tune/results.h"
#include "magmadnn/tune/tune_config.h"

namespace magmadnn::fuzz {

namespace {

namespace fs = std::filesystem;

void write_bytes(const std::string& path, const std::uint8_t* data, std::size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

template <typename F>
bool guarded(F&& body) {
  try {
    body();
    return true;
  } catch (const Error&) {
    return false;
  }
}

// No training: a two-epoch curve computed from the learning rate.
tune::TrialOutcome synthetic(const tune::Trial& t, const std::shared_ptr<distributed::Communicator>&) {
  tune::TrialOutcome o;
  const double lr = t.train_config.at("optimizer").at("learning_rate").get<double>();
  for (std::int64_t e = 1; e <= 2; ++e) o.curve.push_back({e, lr / static_cast<double>(e), 0.5, 0.001 * e});
  o.loss = o.curve.back().loss;
  o.accuracy = 0.5;
  o.seconds = 0.002;
  return o;
}

}  // namespace

const char* const kJournalConfig =
    R"({"train": {"layers": [{"type": "flatten"}, {"type": "dense", "units": 4}], "epochs": 2, "batch_size": 8,)"
    R"( "optimizer": {"type": "sgd", "learning_rate": 0.1}},)"
    R"( "space": [{"path": "optimizer.learning_rate", "values": [0.1, 0.2]}, {"path": "batch_size", "values": [8, 16]}],)"
    R"( "searcher": {"type": "grid"}, "objective": {"kind": "loss"}, "seed": 3})";

bool tune_config(const std::uint8_t* data, std::size_t size) {
  const std::string path = scratch_path("tune.json");
  write_bytes(path, data, size);
  return guarded([&] {
    const tune::TuneConfig cfg = tune::parse_tune_config(run::read_json_file(path));
    const std::unique_ptr<tune::Searcher> s = cfg.make_searcher();
    for (int k = 0; k < 4; ++k)
      if (s->next(0.0).kind != tune::Proposal::Kind::trial) break;
  });
}

bool journal(const std::uint8_t* data, std::size_t size) {
  static const tune::TuneConfig cfg = tune::parse_tune_config(run::Json::parse(kJournalConfig));
  const fs::path dir = scratch_path("search");
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  const std::string path = (dir / "journal.jsonl").string();
  write_bytes(path, data, size);
  return guarded([&] {
    (void)tune::read_journal(path);
    tune::InlineChannel channel(synthetic);
    tune::MasterOptions options;
    options.out_dir = dir.string();
    options.resume = true;
    const tune::SearchResult r = tune::run_search(cfg, channel, options);
    (void)tune::results_json(cfg, r).dump();
    (void)tune::results_csv(cfg, r);
  });
}

}  // namespace magmadnn::fuzz
