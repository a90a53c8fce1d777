/// @file settings.h
/// Reading the small objects of a tune config ("searcher", "objective"):
/// the train config's reader (run/config_object.h) itself, so a tune setting
/// is refused in the same words as a config key: unknown keys with their
/// JSON path, numbers against their range.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "magmadnn/run/config_object.h"

namespace magmadnn::tune {

class Settings : public run::ConfigObject {
 public:
  /// ConfigError naming `where` unless `j` is an object whose keys are all in `allowed`.
  Settings(const run::Json& j, const std::string& where, const std::vector<std::string>& allowed)
      : ConfigObject(j, where, allowed, where.empty() ? "the tune config" : "the " + where) {}
  /// An integer in [lo, hi], or `def` when absent.
  std::int64_t integer(const std::string& key, std::int64_t def, std::int64_t lo, std::int64_t hi) const {
    return ConfigObject::integer(key, def, run::IntRange{lo, hi});
  }
  /// A finite number in [lo, hi], or `def` when absent.
  double number(const std::string& key, double def, double lo, double hi) const {
    return ConfigObject::number(key, def, lo, hi);
  }
};

}  // namespace magmadnn::tune
