/// @file spec_fields.h
/// The run spec's settings, each declared once (spec_fields.cpp): its JSON
/// path, what it accepts, its default, what it means, the `magmadnn train`
/// flag that sets it (if any) and whether `--resume` may change that flag.
/// parse_config and to_json (spec.cpp) read and write every group through
/// this table; `magmadnn train` takes its setting flags, their value ranges
/// and their resume rules from it; `magmadnn train --print-schema` prints it;
/// and the key table of docs/cli.md is generated from it
/// (tests/run/test_spec_schema.cpp fails when the page is stale).
///
/// Requires: nothing; the table is built on each call, so the strategy
/// choices are those registered at the time. Guarantees: every key a config
/// may hold outside `layers` has exactly one entry; a field's reader refuses
/// what its `accepts` does not describe, with a ConfigError naming its path.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "magmadnn/run/config_object.h"
#include "magmadnn/run/spec.h"

namespace magmadnn::run {

/// What a setting takes.
struct Accepts {
  enum class Kind { integer, seed, number, positive, boolean, string, choice, object, other };
  Kind kind = Kind::other;
  IntRange ints{0, 0};                                ///< integer
  double lo = 0, hi = 0;                              ///< number
  bool lo_open = false, hi_open = false;              ///< number: (lo and hi)
  std::function<std::vector<std::string>()> choices;  ///< choice (read when asked: registries grow)
  std::string described;                              ///< string, object, other: in words
  /// In words, for help and docs: "an integer in [1, 1000000]".
  std::string text() const;
};

/// The `magmadnn train` flag that sets a field.
struct SpecFlag {
  std::string name;   ///< "lr" (written --lr); empty: the field has no flag
  std::string value;  ///< "X", "N", "DIR"; empty: a switch that sets true
  std::string help;   ///< its line in `train --help`
  bool resume_may_change = false;
  /// The flag's range when it differs from the config's (--limit-train
  /// refuses 0, which the config reads as "all"; --seed stops at 2^63 - 1).
  std::optional<IntRange> range = std::nullopt;
};

struct SpecField {
  std::string group;  ///< "" (the config's top level) or the object it sits in: "optimizer"
  std::string key;    ///< "learning_rate"
  Accepts accepts;
  std::string meaning;  ///< what it does, for docs/cli.md and --print-schema
  SpecFlag flag;
  std::string what;  ///< objects: how messages name them ("the optimizer")
  /// The default in words when not the written default ("batch_size").
  std::string default_text;
  /// Read and written by its group's own code (spec.cpp: data, layers),
  /// whose checks depend on other keys; listed for the allowed keys, the
  /// flags, the schema and the docs.
  bool by_group = false;
  /// Reads the key from the group's object into `s` (absent: the default
  /// stays). Null for objects without a presence flag and by_group fields.
  std::function<void(const ConfigObject&, TrainSpec&)> read;
  /// The field's value in `s` (to_json writes it; the default is its value
  /// in a default TrainSpec). Null for objects and for layers.
  std::function<Json(const TrainSpec&)> value;
  /// Whether to_json writes it (null: always). Defaults that older configs
  /// lack are left out, so they read back as they were written.
  std::function<bool(const TrainSpec&)> written;

  std::string path() const { return group.empty() ? key : group + "." + key; }
};

/// Every field and object of the run spec, in the order to_json writes them.
/// Built once, on the first call (thread-safe); the reference stays valid for
/// the life of the program.
const std::vector<SpecField>& spec_fields();

/// The keys an object allows ("" for the top level), in table order.
std::vector<std::string> field_keys(const std::string& group);

/// The entry of `path` ("optimizer.learning_rate"); ValueError if none.
SpecField spec_field(const std::string& path);

/// Reads every field of `group` that has a reader from `o` into `s`.
void read_fields(const ConfigObject& o, const std::string& group, TrainSpec& s);

/// Writes every field of `group` that is not by_group and is written into `out`.
void write_fields(const TrainSpec& s, const std::string& group, Json& out);

/// `magmadnn train --print-schema`: one object per field (path, accepts,
/// default, meaning, flag, resume rule).
Json spec_schema();

/// The key table of docs/cli.md (Markdown, header included), from the table.
std::string spec_key_table();

}  // namespace magmadnn::run
