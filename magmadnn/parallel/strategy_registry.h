/// @file strategy_registry.h
/// The registry of data-parallel strategies (strategy.h): one entry per
/// strategy holds its name, one line of help, its place in lists, its traits
/// and its factory. The config's allowed values, the `--strategy` choices
/// and help, make_strategy and every question the run asks of a strategy
/// (does a rank serve instead of training, may loss scaling skip steps
/// across ranks, can it serve model-parallel layers, does it report
/// staleness) read this registry: no code outside a strategy's own files
/// compares its name. A new strategy is its .h and .cpp, the latter ending
/// with
///
///   const StrategyRegistrar<MyStrategy> registrar({"mine", "one line of help", 60, {...traits}});
///
/// and a test. The built-ins, by order: allreduce (10, the default), weight-avg
/// (20), ps (30), asgd (40), ring (50).
///
/// Requires: strategies register before main() (a namespace-scope
/// registrar) or at least before the first run that may name them.
/// Guarantees: another strategy of a name already registered is a
/// ValueError (the identical declaration again is ignored); the
/// entry of the lowest order is the default (DistributedSpec's default).
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "magmadnn/parallel/strategy.h"

namespace magmadnn::distributed {

/// What the rest of the code may ask of a strategy instead of its name.
struct StrategyTraits {
  /// Every step, every rank applies the same gradient, summed over all
  /// ranks before any rank updates: a loss scaler's decision to skip a step
  /// (an inf in the gradients) is then the same on every rank, so loss
  /// scaling across ranks is allowed.
  bool same_gradients_every_step = false;
  /// Serves a hybrid plan: an exchange mask and summed gradients
  /// (StrategyOptions::exchange, sum_gradients; run/parallel_plan.h).
  bool serves_model_parallel = false;
  /// On more than one rank, StrategyOptions::server_rank serves the others
  /// and trains on no data (ShardOptions::server_rank; its progress has
  /// no running values, and its layer state never sees data).
  bool server_trains_no_data = false;
  /// staleness() reports the staleness of the gradients applied
  /// (summary.json's "staleness").
  bool reports_staleness = false;
};

template <typename T>
using StrategyFactory = std::unique_ptr<Strategy<T>> (*)(std::shared_ptr<Communicator>, const StrategyOptions&);

struct StrategyEntry {
  std::string name;
  std::string help;  ///< one line, for --help and docs
  int order = 0;     ///< lists show strategies by increasing order; the lowest is the default
  StrategyTraits traits;
  StrategyFactory<float> make_float = nullptr;
  StrategyFactory<double> make_double = nullptr;

  template <typename T>
  StrategyFactory<T> factory() const {
    if constexpr (std::is_same_v<T, float>) return make_float;
    else return make_double;
  }
};

/// Adds a strategy (ValueError for a name already registered).
void register_strategy(StrategyEntry entry);
/// Every strategy, by increasing order.
std::vector<const StrategyEntry*> strategies();
/// The strategy called `name`; nullptr if there is none.
const StrategyEntry* find_strategy(const std::string& name);
/// The strategy called `name`; ValueError naming the choices if there is none.
const StrategyEntry& strategy_entry(const std::string& name);
/// The default strategy (the lowest order).
const StrategyEntry& default_strategy();
/// The names of the strategies whose traits satisfy `pred`, by order.
template <class Pred>
std::vector<std::string> strategy_names_where(Pred pred) {
  std::vector<std::string> out;
  for (const StrategyEntry* e : strategies()) {
    if (pred(e->traits)) out.push_back(e->name);
  }
  return out;
}

/// Registers S<float> and S<double> (constructed from a communicator and
/// options) under `entry`, from a namespace-scope constant in S's .cpp file.
template <template <typename> class S>
struct StrategyRegistrar {
  explicit StrategyRegistrar(StrategyEntry entry) {
    entry.make_float = [](std::shared_ptr<Communicator> c, const StrategyOptions& o) -> std::unique_ptr<Strategy<float>> {
      return std::make_unique<S<float>>(std::move(c), o);
    };
    entry.make_double = [](std::shared_ptr<Communicator> c,
                           const StrategyOptions& o) -> std::unique_ptr<Strategy<double>> {
      return std::make_unique<S<double>>(std::move(c), o);
    };
    register_strategy(std::move(entry));
  }
};

}  // namespace magmadnn::distributed
