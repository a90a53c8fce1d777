/// @file random_searcher.h
/// RandomSearcher: trial i at SearchSpace::random_point(seed, i), until a
/// budget (trials, seconds) is spent or a finished trial reaches the target
/// accuracy (searcher.h). Trials already running when it stops still finish.
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
