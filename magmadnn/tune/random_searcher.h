/// @file random_searcher.h
/// RandomSearcher: trial i at SearchSpace::random_point(seed, i), until a
/// budget (trials, seconds) is spent or a finished trial reaches the target
/// accuracy. Trials already running when it stops still finish.
///   {"type": "random", "trials": 100, "seconds": 600, "target_accuracy": 0.9}
///       random points until `trials` have started, or `seconds` of search
///       have passed, or a finished trial reached target_accuracy (its
///       last-epoch accuracy); at least one of the three is required
#pragma once

#include <optional>

#include "magmadnn/tune/searcher.h"

namespace magmadnn::tune {

class RandomSearcher final : public Searcher {
 public:
  RandomSearcher(const Json& j, const std::string& where, const SearchContext& context);
  std::string name() const override { return "random"; }
  Proposal next(double elapsed) override;
  void report(const TrialRecord& r) override;
  Json describe() const override;

 private:
  std::int64_t max_trials_ = 0;  // 0: no limit
  double max_seconds_ = 0;       // 0: no limit
  std::optional<double> target_;
  std::int64_t next_ = 0;
  bool reached_ = false;
};

}  // namespace magmadnn::tune
