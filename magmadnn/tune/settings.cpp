#include "magmadnn/tune/settings.h"

#include <algorithm>
#include <cmath>

namespace magmadnn::tune {

using run::ConfigError;
using run::Json;

Settings::Settings(const Json& j, std::string where, const std::vector<std::string>& allowed)
    : j_(j), where_(std::move(where)) {
  if (!j.is_object()) throw ConfigError(where_, "expected an object, got " + j.dump());
  for (const auto& [key, v] : j.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw ConfigError(at(key), "unknown key (allowed: " + list + ")");
  }
}

std::int64_t Settings::integer(const std::string& key, std::int64_t def, std::int64_t lo, std::int64_t hi) const {
  if (!has(key)) return def;
  const Json& v = j_[key];
  if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi)
    throw ConfigError(at(key), "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                                   v.dump());
  return v.get<std::int64_t>();
}

double Settings::number(const std::string& key, double def, double lo, double hi) const {
  if (!has(key)) return def;
  const Json& v = j_[key];
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi)
    throw ConfigError(at(key), "expected a number in [" + Json(lo).dump() + ", " + Json(hi).dump() + "], got " + v.dump());
  return v.get<double>();
}

}  // namespace magmadnn::tune
