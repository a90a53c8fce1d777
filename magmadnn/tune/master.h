/// @file master.h
/// The master of a search: it asks the searcher for trials, hands them to
/// free workers over a MasterChannel (any of the three modes, channel.h),
/// collects the outcomes, scores them with the objective and writes the
/// journal (journal.h), which it alone writes.
///
///   TuneConfig cfg = parse_tune_config(read_json_file("tune.json"));
///   LocalWorkers workers(4, {self_executable(), "tune", "--worker"});
///   SearchResult r = run_search(cfg, workers, {.out_dir = "search"});
///   write_results("search", cfg, r);
///
/// Guarantees:
///  - each trial the searcher proposes ends exactly once in the journal
///    (finished or failed), with its parameters as proposed;
///  - a worker holds one trial at a time, or up to 8 once trials are known
///    to be short (a moving mean under 10 ms), so that such trials share fsyncs;
///  - a worker lost during a trial (wait() reports it) costs that attempt: the
///    trial is started again, on any worker, up to config.retries more times,
///    then fails with the reasons; trials it held but had not begun go back
///    to the front of the line unchanged; the lost slot is refilled when the
///    channel can;
///  - a "started" line is on disk (fsync) before its trial is sent, and every
///    round of outcomes is on disk before the trials it frees are sent;
///  - with resume, the journal in out_dir is replayed (its config must be the
///    same): finished and failed trials are kept and never run again, trials
///    started but not finished are run again once each, and the searcher
///    continues where it stood.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "magmadnn/tune/channel.h"
#include "magmadnn/tune/tune_config.h"

namespace magmadnn::tune {

struct MasterOptions {
  std::string out_dir;  ///< holds journal.jsonl (created if absent)
  bool resume = false;  ///< continue the journal in out_dir (else out_dir must hold none)
  /// Called after each journal commit with the lines committed in this
  /// session (progress; tests stop the master at chosen points here).
  std::function<void(std::size_t lines)> after_commit;
  /// Called when a trial ends (ok or failed), after its line is on disk.
  std::function<void(const TrialRecord&)> on_trial_end;
};

struct SearchResult {
  std::vector<TrialRecord> trials;  ///< by index; status as results.json shows it
  std::optional<std::int64_t> best;
  Json searcher;            ///< the searcher's name and settings at the end
  std::string searcher_name;
  int sessions = 1;         ///< 1 + the number of resumes
  int workers = 1;          ///< of the last session
  double seconds = 0;       ///< search time over all sessions
};

SearchResult run_search(const TuneConfig& config, MasterChannel& channel, const MasterOptions& options);

}  // namespace magmadnn::tune
