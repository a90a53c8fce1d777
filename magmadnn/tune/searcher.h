/// @file searcher.h
/// Searchers: what trial comes next. The "searcher" object of the tune
/// config is {"type": NAME, ...its settings}, NAME a registered searcher
/// (SearcherEntry below; `magmadnn tune --help` lists them): each documents
/// its settings in its own header (grid_searcher.h, random_searcher.h,
/// asha_searcher.h). Random and ASHA draw trial (or configuration) c's point
/// as SearchSpace::random_point(seed, c), so parameters depend on (seed, c) only.
///
/// Requires: the master calls next() and report() from one thread; it
/// replays a journal by making the same calls in the same order, with the
/// same elapsed times, and gets the same proposals (searchers are
/// deterministic functions of that sequence).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

  /// Its registry name (SearcherEntry::name).
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
/// (ConfigError naming the path for a mistake, e.g. a grid over a distribution,
/// or an unknown "type", naming the registered ones).
std::unique_ptr<Searcher> make_searcher(const Json& j, const std::string& where, const SearchContext& context);

/// The registry of searchers: one entry per searcher, registered by its own
/// .cpp file, holds the name the "type" key gives, one line of help, its
/// place in lists and its factory. make_searcher, the tune config's default
/// and `magmadnn tune --help` read it, so a new searcher is its .h and .cpp,
/// the latter ending with
///
///   const SearcherRegistrar<MySearcher> registrar({"mine", "one line of help", 40});
///
/// (MySearcher constructed from (const Json&, const std::string& where,
/// const SearchContext&)) and a test. Built-ins by order: grid (10, the
/// default), random (20), asha (30). Requires: registration before main()
/// or before the first search that names it. Guarantees: another searcher
/// of a name already registered is a ValueError (the identical
/// declaration again is ignored, core/registry.h).
struct SearcherEntry {
  std::string name;
  std::string help;  ///< one line, for --help and docs
  int order = 0;     ///< lists show searchers by increasing order; the lowest is the default
  std::unique_ptr<Searcher> (*make)(const Json& j, const std::string& where, const SearchContext& context) = nullptr;
};

void register_searcher(SearcherEntry entry);
/// Every searcher, by increasing order.
std::vector<const SearcherEntry*> searchers();
/// The searcher called `name`; nullptr if there is none.
const SearcherEntry* find_searcher(const std::string& name);
std::vector<std::string> searcher_names();
/// The "searcher" object of a tune config that gives none: {"type": <the default>}.
Json default_searcher_object();

/// Registers S under `entry`, from a namespace-scope constant in S's .cpp file.
template <class S>
struct SearcherRegistrar {
  explicit SearcherRegistrar(SearcherEntry entry) {
    entry.make = [](const Json& j, const std::string& where, const SearchContext& c) -> std::unique_ptr<Searcher> {
      return std::make_unique<S>(j, where, c);
    };
    register_searcher(std::move(entry));
  }
};

}  // namespace magmadnn::tune
