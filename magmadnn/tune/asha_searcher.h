/// @file asha_searcher.h
/// AshaSearcher: asynchronous successive halving (Li et al. 2018):
///   {"type": "asha", "configs": 27, "min_epochs": 1, "max_epochs": 9, "eta": 3}
/// rungs train min_epochs * eta^k epochs (the last rung max_epochs); a free
/// worker promotes the best not yet promoted configuration among the top
/// 1/eta of a rung's finished trials, else starts a new configuration at
/// rung 0. A trial is one
/// configuration trained for its rung's epochs from scratch; results.json
/// shows a configuration that stopped below the top rung as "pruned", and
/// only the trials of the highest rung reached compete for the best.
///
/// Guarantees: with `configs` = eta^k and trials reported in any order,
/// every configuration runs at rung 0, and a configuration is promoted from
/// rung r only when it is among the best floor(n_r / eta) of the n_r
/// finished there (never a failed or null-objective one), at most once.
#pragma once

#include <map>
#include <set>
#include <vector>

#include "magmadnn/tune/searcher.h"

namespace magmadnn::tune {

class AshaSearcher final : public Searcher {
 public:
  AshaSearcher(const Json& j, const std::string& where, const SearchContext& context);
  std::string name() const override { return "asha"; }
  Proposal next(double elapsed) override;
  void report(const TrialRecord& r) override;
  Json describe() const override;
  std::string final_status(const TrialRecord& r) const override;
  bool competes(const TrialRecord& r) const override;

  /// The epochs of each rung.
  const std::vector<std::int64_t>& rungs() const noexcept { return rungs_; }

 private:
  struct Finished {
    std::int64_t config;
    std::optional<double> objective;
  };
  std::vector<std::int64_t> rungs_;
  std::int64_t configs_ = 0, eta_ = 3;
  std::int64_t next_index_ = 0, next_config_ = 0, running_ = 0;
  std::vector<std::vector<Finished>> finished_;  // per rung
  std::vector<std::set<std::int64_t>> promoted_;  // per rung: configs sent up from it
  std::map<std::int64_t, Json> params_;           // per config
  std::map<std::int64_t, int> top_rung_;          // per config: the highest rung it finished
  int highest_ = 0;                               // the highest rung any config finished
};

}  // namespace magmadnn::tune
