/// @file tune_results.h
/// DIR/results.json of `magmadnn tune --out DIR`, read back for the report
/// page (tune_report.h). The search engine writes the file; this is its
/// reader, which checks every field the page uses and ignores the others,
/// so the engine may add fields without breaking the page.
///
/// The file (keys not listed are allowed and ignored):
///   { "objective": {"kind": "loss_area", ...},   kind required; the rest shown as written
///     "searcher": "grid", "seed": 42,            optional
///     "best": 7 | null,                          the best trial's "index"; optional (null: none)
///     "dimensions": [{"path": "optimizer.learning_rate", "kind": "list", ...}],
///     "trials": [{"index": 0, "params": {"optimizer.learning_rate": 0.1, ...},
///                 "status": "ok" | "failed" | "pruned",
///                 "attempts": 1, "worker": 2, "seconds": 3.5,     optional
///                 "objective": 0.42 | null,                        optional
///                 "final": {"loss": .., "accuracy": .., "test_accuracy": .. | null},   optional
///                 "curve": [{"epoch": 1, "loss": .., "accuracy": .., "seconds": ..}],  optional
///                 "error": "..."}] }                                optional
/// Numbers may be null (JSON has no NaN); they are read as NaN. A curve
/// point's "seconds" is the trial's training time up to the end of that
/// epoch (cumulative), as magmadnn tune writes it.
///
/// Requires: the file exists and holds the keys above with those types;
/// trial indices are distinct and "best", when not null, is one of them.
/// Guarantees: read_tune_results returns the trials in the file's order, or
/// throws IOError whose message names the file and the JSON path of the
/// first bad field with what was found there (`results.json: trials[3].status:
/// expected one of "ok", "failed", "pruned", got "done"`).
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "run_names.h"

namespace magmadnn::cli {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

enum class TrialStatus { ok, failed, pruned };
const char* status_name(TrialStatus s);

/// One epoch of a trial's training.
struct TrialPoint {
  double epoch = 0, loss = 0, accuracy = 0, seconds = 0;
};

struct TuneTrial {
  std::int64_t index = 0;
  Json params;  ///< dimension path -> value, as the engine wrote it (an object)
  TrialStatus status = TrialStatus::ok;
  /// NaN when absent or null.
  double attempts = kNaN, worker = kNaN, seconds = kNaN, objective = kNaN;
  double final_loss = kNaN, final_accuracy = kNaN, test_accuracy = kNaN;
  std::vector<TrialPoint> curve;
  std::string error;  ///< failed trials: why
};

struct TuneDimension {
  std::string path;  ///< e.g. "optimizer.learning_rate"
  std::string kind;  ///< e.g. "list", "range", "log_uniform"
  Json spec;         ///< the whole object as written
};

struct TuneResults {
  std::string file;  ///< where it was read from, for messages
  Json objective;    ///< an object with at least "kind"
  std::string searcher;
  std::optional<std::int64_t> seed;
  std::optional<std::int64_t> best;  ///< a trial's index
  std::vector<TuneDimension> dimensions;
  std::vector<TuneTrial> trials;

  /// The trial whose index is `best`, or nullptr.
  const TuneTrial* best_trial() const;
  /// Whether a smaller objective is better (see tune_report.h for how it is decided).
  bool minimize() const;
};

/// Reads and checks `file` (see the file comment).
TuneResults read_tune_results(const std::filesystem::path& file);

}  // namespace magmadnn::cli
