/// @file tune_config.h
/// The tune config: one JSON document describing a whole search.
///
///   { "train":     { ...a train config (run/spec.h), or {"preset": "lenet5", ...overrides} },
///     "space":     [ ...dimensions (space.h) ],
///     "searcher":  { "type": NAME, ... }   (a registered searcher, searcher.h; default the first, grid)
///     "objective": { "kind": NAME, ... }   (a registered objective kind, objective.h; default loss)
///     "seed":      0,            the search's seed: trial i's point derives from (seed, i)
///     "retries":   1 }           times a trial lost with its worker is started again (0..10)
///
/// Guarantees: parse_tune_config either returns a config whose train part
/// parses (run::parse_config) at every listed point of the space, or throws
/// run::ConfigError whose message starts with the JSON path of the mistake
/// (unknown keys included: "searcher.trails: unknown key ...").
#pragma once

#include <cstdint>
#include <memory>

#include "magmadnn/tune/objective.h"
#include "magmadnn/tune/searcher.h"

namespace magmadnn::tune {

struct TuneConfig {
  Json source;             ///< the document as given (the journal keeps it, --resume compares it)
  SearchContext context;   ///< space, base train config, seed, objective
  Json searcher = default_searcher_object();  ///< the searcher's object (make_searcher)
  int retries = 1;

  std::unique_ptr<Searcher> make_searcher() const;
};

/// Where two JSON documents differ: the JSON path ("train.epochs",
/// "space[0].values[1]"; "" for the whole document) and each side's value
/// as JSON text ("(absent)" for a missing key).
struct JsonDifference {
  std::string path, was, now;
};

/// The first difference between `was` and `now`, or nullopt when they are
/// the same document: objects are compared key by key whatever the order of
/// their keys (an editor or `jq -S` reorders them), arrays element by
/// element, numbers by value (1 and 1.0 are the same).
std::optional<JsonDifference> first_difference(const Json& was, const Json& now);

/// Parses a tune config; `seed_override` (the --seed flag) replaces "seed".
TuneConfig parse_tune_config(const Json& j, const ObjectiveCallbacks& callbacks = {},
                             std::optional<std::uint64_t> seed_override = std::nullopt);

}  // namespace magmadnn::tune
