/// @file timing.h
/// Times convolution algorithms against each other on one pass of one
/// problem: the measuring behind the chooser's first choice for a problem
/// (chooser.h) and behind the convolution benchmark (bench.h).
///
/// The algorithms run on random inputs (uniform in [-1, 1)) in the memory of
/// the device, each with a workspace of its own. Each runs once to warm up
/// (plans, primitives, first touch), then come rounds in which every
/// candidate still being timed runs once: interleaving spreads any change in
/// machine load over all of them instead of penalising whichever ran during
/// it. A candidate's time is its fastest run, the wait for the device
/// included.
#pragma once

#include <limits>
#include <optional>
#include <vector>

#include "magmadnn/conv/algorithm.h"

namespace magmadnn::conv {

/// How many rounds to time.
struct TimingRounds {
  /// Timed rounds at most (at least one is run).
  int max_rounds = 3;
  /// Rounds run whatever the budget says.
  int min_rounds = 3;
  /// Once the timed runs add up to this many seconds (and min_rounds are
  /// done), no further round starts.
  double budget_seconds = std::numeric_limits<double>::infinity();
  /// When > 0: after each round, a candidate whose fastest run is at least
  /// drop_ratio times the leader's is no longer timed, and the rounds end
  /// when a single candidate is left (for choosing, not for reporting).
  double drop_ratio = 0;
  /// When > 0: the same, with this (smaller) ratio, once min_rounds are
  /// done: a clear winner ends the timing early, while candidates within
  /// the ratio of each other go on to max_rounds.
  double settle_ratio = 0;
};

/// Times `candidates` (all for `device`, all supporting `pass` of `prob`; an
/// algorithm may appear more than once) on device `device_id`, as described
/// above. Returns one entry per candidate, in order: its fastest run in
/// seconds, or nullopt when it could not run (a DeviceError while allocating
/// its workspace or in its warm-up, e.g. out of device memory). T is float,
/// double, or half or bfloat16 (drawn in float and converted).
template <typename T>
std::vector<std::optional<double>> time_algorithms(const std::vector<ConvAlgorithm<T>*>& candidates,
                                                   const ConvProblem& prob, Pass pass, DeviceKind device,
                                                   device_t device_id, const TimingRounds& rounds);

}  // namespace magmadnn::conv
