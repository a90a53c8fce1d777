#include "magmadnn/tune/searcher.h"

#include "magmadnn/tune/asha_searcher.h"
#include "magmadnn/tune/grid_searcher.h"
#include "magmadnn/tune/random_searcher.h"

namespace magmadnn::tune {

Trial Searcher::make_trial(std::int64_t index, std::int64_t config, int rung, Json params, std::int64_t epochs) const {
  Trial t;
  t.index = index;
  t.config = config;
  t.rung = rung;
  t.train_config = apply_params(ctx_.base, params);
  if (epochs > 0) t.train_config["epochs"] = epochs;
  t.params = std::move(params);
  return t;
}

std::unique_ptr<Searcher> make_searcher(const Json& j, const std::string& where, const SearchContext& context) {
  if (!j.is_object()) throw run::ConfigError(where, "expected an object {\"type\": ...}, got " + j.dump());
  const std::string type = j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
  if (type == "grid") return std::make_unique<GridSearcher>(j, where, context);
  if (type == "random") return std::make_unique<RandomSearcher>(j, where, context);
  if (type == "asha") return std::make_unique<AshaSearcher>(j, where, context);
  throw run::ConfigError(where + ".type", "expected \"grid\", \"random\" or \"asha\", got " +
                                              (j.contains("type") ? j["type"].dump() : "nothing"));
}

}  // namespace magmadnn::tune
