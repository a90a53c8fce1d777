/// @file weight_avg_strategy.h
/// WeightAvgStrategy<T> ("weight-avg"): every rank trains on its own data
/// with its own optimizer (local steps, no exchange), and every
/// StrategyOptions::average_every = k steps the parameters are replaced by
/// their mean over the ranks (SHM-Learn-Dist's weight-averaged parallelism).
/// Communication happens once per k steps instead of every step, at the
/// price of ranks drifting apart in between.
///
/// Requires: equal step counts on every rank. Guarantees: right after an
/// averaging step, and after finalize(), all ranks hold the same parameters;
/// with k = 1 and plain SGD (no momentum) a step equals one of gradient
/// averaging, since the mean of w - lr * g_r is w - lr * mean(g_r) (up to
/// rounding). Optimizer state (momentum, Adam moments) and layer state stay
/// local; plain SGD keeps its update fused into the backward pass.
#pragma once

#include "magmadnn/parallel/strategy.h"
#include "magmadnn/parallel/flat_params.h"

namespace magmadnn::distributed {

template <typename T>
class WeightAvgStrategy final : public Strategy<T> {
 public:
  WeightAvgStrategy(std::shared_ptr<Communicator> comm, StrategyOptions options)
      : Strategy<T>(std::move(comm), options) {}
  std::string name() const override { return "weight-avg"; }
  void attach(model::NeuralNetwork<T>& net) override;
  void after_update() override { on_step_done(); }
  /// Averages once more if steps were taken since the last average.
  void finalize() override;

 private:
  void average();
  void on_step_done();
  detail::FlatParams<T> layout_;
  std::vector<T> flat_;
  std::int64_t since_average_ = 0;
  std::chrono::steady_clock::time_point step_mark_;
};

}  // namespace magmadnn::distributed
