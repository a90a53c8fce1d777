#include "magmadnn/tune/searcher.h"

#include "magmadnn/core/registry.h"

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

namespace {
// A function-local static: searchers register from static initializers in
// their own translation units, possibly before this file's run.
NamedRegistry<SearcherEntry>& registry() {
  static NamedRegistry<SearcherEntry> r("searcher");
  return r;
}
}  // namespace

void register_searcher(SearcherEntry entry) {
  MAGMADNN_CHECK(entry.make != nullptr, ValueError, "searcher '" << entry.name << "' registered without a factory");
  registry().add(std::move(entry));
}
std::vector<const SearcherEntry*> searchers() { return registry().entries(); }
const SearcherEntry* find_searcher(const std::string& name) { return registry().find(name); }
std::vector<std::string> searcher_names() { return registry().names(); }

Json default_searcher_object() {
  const std::vector<const SearcherEntry*> all = searchers();
  MAGMADNN_CHECK(!all.empty(), ValueError, "no searcher is registered");
  return Json{{"type", all.front()->name}};
}

std::unique_ptr<Searcher> make_searcher(const Json& j, const std::string& where, const SearchContext& context) {
  if (!j.is_object()) throw run::ConfigError(where, "expected an object {\"type\": ...}, got " + j.dump());
  const std::string type = j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
  if (const SearcherEntry* e = find_searcher(type)) return e->make(j, where, context);
  throw run::ConfigError(where + ".type", "expected " + names_text(searcher_names(), " or ", "\"") + ", got " +
                                              (j.contains("type") ? j["type"].dump() : "nothing"));
}

}  // namespace magmadnn::tune
