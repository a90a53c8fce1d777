// The strategy registry. Each strategy's translation unit registers itself
// from a static initializer, possibly before anything else in this file
// runs, so the registry lives in a function-local static.
#include "magmadnn/parallel/strategy_registry.h"

#include "magmadnn/core/registry.h"

namespace magmadnn::distributed {
namespace {

NamedRegistry<StrategyEntry>& registry() {
  static NamedRegistry<StrategyEntry> r("distributed strategy");
  return r;
}

}  // namespace

void register_strategy(StrategyEntry entry) {
  MAGMADNN_CHECK(entry.make_float != nullptr && entry.make_double != nullptr, ValueError,
                 "distributed strategy '" << entry.name << "' registered without a factory");
  registry().add(std::move(entry));
}

std::vector<const StrategyEntry*> strategies() { return registry().entries(); }

const StrategyEntry* find_strategy(const std::string& name) { return registry().find(name); }

const StrategyEntry& strategy_entry(const std::string& name) {
  const StrategyEntry* e = find_strategy(name);
  MAGMADNN_CHECK(e != nullptr, ValueError,
                 "unknown distributed strategy '" << name << "' (choose one of: " << names_text(strategy_names(), ", ")
                                                  << ")");
  return *e;
}

const StrategyEntry& default_strategy() {
  const std::vector<const StrategyEntry*> all = strategies();
  MAGMADNN_CHECK(!all.empty(), ValueError, "no distributed strategy is registered");
  return *all.front();
}

std::vector<std::string> strategy_names() { return registry().names(); }

}  // namespace magmadnn::distributed
