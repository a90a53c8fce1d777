/// @file grid_searcher.h
/// GridSearcher: every point of a finite space exactly once; trial i is grid
/// point i (SearchSpace::grid_point), so its parameters depend on i alone.
///   {"type": "grid"}    every point of the space exactly once, in grid order
///                       (space.h; the last dimension fastest); the default
#pragma once

#include "magmadnn/tune/searcher.h"

namespace magmadnn::tune {

class GridSearcher final : public Searcher {
 public:
  GridSearcher(const Json& j, const std::string& where, const SearchContext& context);
  std::string name() const override { return "grid"; }
  Proposal next(double elapsed) override;
  void report(const TrialRecord&) override {}
  Json describe() const override { return {{"type", "grid"}, {"points", size_}}; }

 private:
  std::uint64_t size_ = 0, next_ = 0;
};

}  // namespace magmadnn::tune
