/// @file searcher.h
/// Searchers: what trial comes next. The "searcher" object of the tune config:
///   {"type": "grid"}                 every point of the space exactly once, in
///                                    grid order (space.h; the last dimension fastest)
///   {"type": "random", "trials": 100, "seconds": 600, "target_accuracy": 0.9}
///                                    random points until `trials` have started, or
///                                    `seconds` of search have passed, or a finished
///                                    trial reached target_accuracy (its last-epoch
///                                    accuracy); at least one of the three is required
///   {"type": "asha", "configs": 27, "min_epochs": 1, "max_epochs": 9, "eta": 3}
///                                    asynchronous successive halving (Li et al. 2018):
///                                    rungs train min_epochs * eta^k epochs (the last
///                                    rung max_epochs); a free worker promotes the best
///                                    not yet promoted configuration among the top 1/eta
///                                    of a rung's finished trials, else starts a new
///                                    configuration at rung 0
/// Random and ASHA draw trial (or configuration) c's point as
/// SearchSpace::random_point(seed, c), so parameters depend on (seed, c) only.
///
/// Requires: the master calls next() and report() from one thread; it
/// replays a journal by making the same calls in the same order, with the
/// same elapsed times, and gets the same proposals (searchers are
/// deterministic functions of that sequence).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "magmadnn/tune/objective.h"
#include "magmadnn/tune/space.h"
#include "magmadnn/tune/trial.h"

namespace magmadnn::tune {

/// What every searcher needs to make a trial.
struct SearchContext {
  SearchSpace space;
  Json base;               ///< the train config the params are applied to
  std::uint64_t seed = 0;  ///< the search's seed
  Objective objective;
};

struct Proposal {
  enum class Kind { trial, wait, done };
  Kind kind = Kind::done;
  Trial trial;  ///< kind == trial
};

class Searcher {
 public:
  explicit Searcher(const SearchContext& context) : ctx_(context) {}
  virtual ~Searcher() = default;
  Searcher(const Searcher&) = delete;
  Searcher& operator=(const Searcher&) = delete;

  /// "grid", "random" or "asha".
  virtual std::string name() const = 0;
  /// The next trial (index: the number proposed so far), or wait (nothing to
  /// start until a running trial reports), or done. `elapsed` is the search's
  /// seconds so far, over every session of it.
  virtual Proposal next(double elapsed) = 0;
  /// A proposed trial's end (ok or failed), with its objective.
  virtual void report(const TrialRecord& record) = 0;
  /// The settings, for results.json.
  virtual Json describe() const = 0;
  /// results.json's status of a finished record (ASHA: "pruned" below the top rung).
  virtual std::string final_status(const TrialRecord& r) const { return r.status; }
  /// Whether `r` competes for the best trial (ASHA: only the highest rung reached).
  virtual bool competes(const TrialRecord& r) const { return true; }

  const SearchContext& context() const noexcept { return ctx_; }

 protected:
  /// Trial `index` of configuration `config` with `params`; epochs > 0 overrides the config's.
  Trial make_trial(std::int64_t index, std::int64_t config, int rung, Json params, std::int64_t epochs = 0) const;
  Proposal propose(Trial t) const { return {Proposal::Kind::trial, std::move(t)}; }

  SearchContext ctx_;
};

/// The searcher the "searcher" object `j` (at JSON path `where`) describes
/// (ConfigError naming the path for a mistake, e.g. a grid over a distribution).
std::unique_ptr<Searcher> make_searcher(const Json& j, const std::string& where, const SearchContext& context);

}  // namespace magmadnn::tune
