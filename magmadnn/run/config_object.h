/// @file config_object.h
/// The readers of a run config's JSON objects (spec.cpp, layer_kinds.cpp):
/// a ConfigObject is a view of one JSON object under its path that refuses
/// keys it was not told of and reads each value with its range, so every
/// error names the JSON path of the value and quotes it
/// (`layers[2].units: expected an integer in [1, 1048576], got "abc"`).
///
/// Requires: the Json outlives the view. Guarantees: every reader returns
/// the default when the key is absent, else a value in range, else throws
/// ConfigError.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "magmadnn/run/spec.h"

namespace magmadnn::run {

/// "\"a\", \"b\"": names as JSON strings, comma-separated (for messages).
inline std::string quoted_list(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + Json(n).dump();
  return s;
}

/// An integer of JSON (signed or unsigned) inside [r.min, r.max].
inline bool in_range(const Json& v, IntRange r) {
  if (v.is_number_unsigned()) {
    const std::uint64_t x = v.get<std::uint64_t>();
    return x <= static_cast<std::uint64_t>(r.max) && (r.min <= 0 || x >= static_cast<std::uint64_t>(r.min));
  }
  if (!v.is_number_integer()) return false;
  const std::int64_t x = v.get<std::int64_t>();
  return x >= r.min && x <= r.max;
}

inline std::string range_text(IntRange r) {
  return "an integer in [" + std::to_string(r.min) + ", " + std::to_string(r.max) + "]";
}

/// A view of one JSON object under a path. Construction rejects keys outside
/// `allowed` (`what` names the object in that message: "a dense layer").
class ConfigObject {
 public:
  ConfigObject(const Json& j, std::string path, const std::vector<std::string>& allowed, const std::string& what)
      : j_(j), path_(std::move(path)) {
    if (!j.is_object()) throw ConfigError(path_, "expected an object, got " + j.dump());
    for (const auto& [key, value] : j.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        throw ConfigError(at(key), "unknown key in " + what + " (allowed: " + quoted_list(allowed) + ")");
      }
    }
  }

  std::string at(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  bool has(const std::string& key) const { return j_.contains(key); }
  const Json& get(const std::string& key) const { return j_.at(key); }

  std::int64_t integer(const std::string& key, std::int64_t def, IntRange r) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (!in_range(v, r)) throw ConfigError(at(key), "expected " + range_text(r) + ", got " + v.dump());
    return v.get<std::int64_t>();
  }

  std::uint64_t seed(const std::string& key, std::uint64_t def) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
    throw ConfigError(at(key), "expected a non-negative integer, got " + v.dump());
  }

  // A bound as the shortest text that reads back as the same double, so a
  // limit is printed exactly (16777216, never 1.67772e+07).
  static std::string exact(double x) {
    char buf[40];
    for (int digits = 6; digits <= 17; ++digits) {
      std::snprintf(buf, sizeof buf, "%.*g", digits, x);
      if (std::strtod(buf, nullptr) == x) break;
    }
    return buf;
  }

  // A finite number in [lo, hi] (hi_open: [lo, hi)).
  double number(const std::string& key, double def, double lo, double hi, bool hi_open = false) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (!v.is_number()) throw ConfigError(at(key), "expected a number, got " + v.dump());
    const double x = v.get<double>();
    const bool ok = std::isfinite(x) && x >= lo && (hi_open ? x < hi : x <= hi);
    if (!ok) {
      std::ostringstream os;
      os << "expected a number in [" << exact(lo) << ", ";
      if (std::isinf(hi)) os << "inf)"; else os << exact(hi) << (hi_open ? ")" : "]");
      os << ", got " << v.dump();
      throw ConfigError(at(key), os.str());
    }
    return x;
  }

  double positive(const std::string& key, double def) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0) {
      throw ConfigError(at(key), "expected a positive number, got " + v.dump());
    }
    return v.get<double>();
  }

  bool boolean(const std::string& key, bool def) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (!v.is_boolean()) throw ConfigError(at(key), "expected true or false, got " + v.dump());
    return v.get<bool>();
  }

  std::string string(const std::string& key, const std::string& def) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (!v.is_string()) throw ConfigError(at(key), "expected a string, got " + v.dump());
    return v.get<std::string>();
  }

  std::string choice(const std::string& key, const std::string& def, const std::vector<std::string>& options) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (!v.is_string() || std::find(options.begin(), options.end(), v.get<std::string>()) == options.end()) {
      throw ConfigError(at(key), "expected one of " + quoted_list(options) + ", got " + v.dump());
    }
    return v.get<std::string>();
  }

  // A 2-D window given as one integer (square) or [h, w].
  std::vector<std::int64_t> pair(const std::string& key, std::vector<std::int64_t> def, IntRange r) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (in_range(v, r)) return {v.get<std::int64_t>(), v.get<std::int64_t>()};
    if (v.is_array() && v.size() == 2 && in_range(v[0], r) && in_range(v[1], r)) {
      return {v[0].get<std::int64_t>(), v[1].get<std::int64_t>()};
    }
    throw ConfigError(at(key), "expected " + range_text(r) + " or [h, w] of such integers, got " + v.dump());
  }

 private:
  const Json& j_;
  std::string path_;
};

}  // namespace magmadnn::run
