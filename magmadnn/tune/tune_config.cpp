#include "magmadnn/tune/tune_config.h"

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

}  // namespace

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
  c.context.objective = Objective::parse(j.contains("objective") ? j["objective"] : Json{{"kind", "loss"}},
                                         "objective", callbacks);
  if (j.contains("searcher")) c.searcher = j["searcher"];
  c.make_searcher();  // refuses a bad searcher object now, with its path
  return c;
}

}  // namespace magmadnn::tune
