/// @file trial.h
/// What a search hands to a worker (Trial), what comes back (TrialOutcome),
/// what the master keeps of it (TrialRecord), and the function that runs a
/// trial (TrialFunction). Each converts to and from JSON: that is both the
/// worker protocol's payload and the journal's record, so a trial reads the
/// same whether it came over a pipe, over MPI or from the journal.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/run/spec.h"

namespace magmadnn::tune {

using run::Json;

struct Trial {
  std::int64_t index = 0;   ///< the trial number, from 0, in the order the searcher proposed it
  std::int64_t config = 0;  ///< the configuration: its params derive from (seed, config); == index but in ASHA
  int rung = 0;             ///< ASHA: the rung (0 otherwise)
  int attempt = 1;          ///< 1, then 2 for the retry after a lost worker
  Json params = Json::object();  ///< {path: value} of the search dimensions
  Json train_config;              ///< the complete train config the trial runs (params and epochs applied)

  Json to_json() const;
  static Trial from_json(const Json& j);
};

struct CurvePoint {
  std::int64_t epoch = 0;  ///< 1-based
  double loss = 0;         ///< validation loss when the run validates, else training loss
  double accuracy = 0;     ///< likewise
  double seconds = 0;      ///< training seconds from the start of the trial to the end of this epoch
};

/// A worker's answer. A trial function returns it; the worker fills
/// `seconds` (wall time of the call) when the function leaves it negative.
struct TrialOutcome {
  bool ok = true;
  std::string error;  ///< why it failed (!ok)
  std::vector<CurvePoint> curve;
  double loss = 0, accuracy = 0;        ///< the last epoch's (validation, else training)
  std::optional<double> test_accuracy;  ///< the test split, scored once at the end
  double seconds = -1;                  ///< wall seconds of the trial
  Json extra = Json::object();          ///< anything else (the run's summary), passed through

  Json to_json() const;
  static TrialOutcome from_json(const Json& j);
};

/// A trial's fate as results.json shows it.
struct TrialRecord {
  Trial trial;
  std::string status = "running";  ///< ok, failed, pruned (ASHA: stopped below the top rung)
  int attempts = 0;
  int worker = -1;
  TrialOutcome outcome;
  std::optional<double> objective;  ///< null: failed, or not eligible (loss_area above its threshold)

  bool done() const noexcept { return status != "running"; }
  /// results.json's trial entry.
  Json to_json() const;
};

/// Runs one trial. `group` is the trial's data-parallel group under mpirun
/// with --ranks-per-trial K > 1 (every rank of it calls the function with the
/// same trial), else null. Throwing marks the trial failed with the message.
using TrialFunction =
    std::function<TrialOutcome(const Trial& trial, const std::shared_ptr<distributed::Communicator>& group)>;

}  // namespace magmadnn::tune
