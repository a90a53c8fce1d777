#include "magmadnn/tune/tune_config.h"

#include <algorithm>
#include <optional>
#include <string>

#include "magmadnn/run/presets.h"
#include "magmadnn/tune/settings.h"

namespace magmadnn::tune {
namespace {

using run::ConfigError;

// The train config a "train" object stands for: itself, or a preset with the
// object's other keys merged over it.
Json base_train_config(const Json& train) {
  if (!train.is_object()) throw ConfigError("train", "expected a train config object, got " + train.dump());
  if (!train.contains("preset")) return train;
  if (!train["preset"].is_string()) throw ConfigError("train.preset", "expected a preset name, got " + train["preset"].dump());
  Json base;
  try {
    base = run::preset(train["preset"].get<std::string>());
  } catch (const Error& e) {
    throw ConfigError("train.preset", e.what());
  }
  Json rest = train;
  rest.erase("preset");
  run::merge_json(base, rest);
  return base;
}

std::string shown(const Json& j) {
  std::string s = j.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

std::optional<JsonDifference> difference_at(const Json& was, const Json& now, const std::string& path) {
  if (was.is_object() && now.is_object()) {
    for (const auto& [key, value] : was.items()) {
      const std::string p = path.empty() ? key : path + "." + key;
      if (!now.contains(key)) return JsonDifference{p, shown(value), "(absent)"};
      if (auto d = difference_at(value, now[key], p)) return d;
    }
    for (const auto& [key, value] : now.items()) {
      if (!was.contains(key)) return JsonDifference{path.empty() ? key : path + "." + key, "(absent)", shown(value)};
    }
    return std::nullopt;
  }
  if (was.is_array() && now.is_array()) {
    for (std::size_t i = 0; i < std::min(was.size(), now.size()); ++i) {
      if (auto d = difference_at(was[i], now[i], path + "[" + std::to_string(i) + "]")) return d;
    }
    if (was.size() == now.size()) return std::nullopt;
    return JsonDifference{path, shown(was) + " (" + std::to_string(was.size()) + " elements)",
                          shown(now) + " (" + std::to_string(now.size()) + " elements)"};
  }
  if (was == now) return std::nullopt;  // scalars; numbers compare by value
  return JsonDifference{path, shown(was), shown(now)};
}

}  // namespace

std::optional<JsonDifference> first_difference(const Json& was, const Json& now) { return difference_at(was, now, ""); }

std::unique_ptr<Searcher> TuneConfig::make_searcher() const {
  return tune::make_searcher(searcher, "searcher", context);
}

TuneConfig parse_tune_config(const Json& j, const ObjectiveCallbacks& callbacks,
                             std::optional<std::uint64_t> seed_override) {
  const Settings s(j, "", {"train", "space", "searcher", "objective", "seed", "retries"});
  if (!j.contains("train")) throw ConfigError("train", "missing (the train config every trial starts from)");
  TuneConfig c;
  c.source = j;
  c.context.base = base_train_config(j["train"]);
  try {
    run::parse_config(c.context.base);
  } catch (const ConfigError& e) {
    const std::string shown = e.path().empty() ? "config" : e.path();  // what ConfigError printed
    throw ConfigError(e.path().empty() ? "train" : "train." + e.path(), std::string(e.what()).substr(shown.size() + 2));
  }
  if (j.contains("seed")) {
    const Json& v = j["seed"];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
      throw ConfigError("seed", "expected a non-negative integer, got " + v.dump());
    c.context.seed = v.get<std::uint64_t>();
  }
  if (seed_override) c.context.seed = *seed_override;
  c.retries = static_cast<int>(s.integer("retries", 1, 0, 10));
  c.context.space = parse_space(j.contains("space") ? j["space"] : Json::array(), "space", c.context.base);
  c.context.objective = Objective::parse(j.contains("objective") ? j["objective"] : Json{{"kind", default_objective().name}},
                                         "objective", callbacks);
  if (j.contains("searcher")) c.searcher = j["searcher"];
  c.make_searcher();  // refuses a bad searcher object now, with its path
  return c;
}

}  // namespace magmadnn::tune
