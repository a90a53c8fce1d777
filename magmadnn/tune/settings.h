/// @file settings.h
/// Reading the small objects of a tune config ("searcher", "objective"):
/// unknown keys refused with their JSON path, numbers checked against
/// their range, in the manner of the train config's reader (run/spec.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "magmadnn/run/spec.h"

namespace magmadnn::tune {

class Settings {
 public:
  /// ConfigError naming `where` unless `j` is an object whose keys are all in `allowed`.
  Settings(const run::Json& j, std::string where, const std::vector<std::string>& allowed);
  bool has(const std::string& key) const { return j_.contains(key); }
  /// The JSON path of `key` ("searcher.trials"; at the root, the key alone).
  std::string at(const std::string& key) const { return where_.empty() ? key : where_ + "." + key; }
  /// An integer in [lo, hi], or `def` when absent.
  std::int64_t integer(const std::string& key, std::int64_t def, std::int64_t lo, std::int64_t hi) const;
  /// A finite number in [lo, hi], or `def` when absent.
  double number(const std::string& key, double def, double lo, double hi) const;

 private:
  const run::Json& j_;
  std::string where_;
};

}  // namespace magmadnn::tune
