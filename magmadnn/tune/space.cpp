#include "magmadnn/tune/space.h"

#include <sstream>

#include <algorithm>
#include <cmath>
#include <limits>

#include "magmadnn/tune/counter_rng.h"

namespace magmadnn::tune {
namespace {

using run::ConfigError;

// One step of a parameter path: an object key or an array index.
struct PathStep {
  std::string key;
  std::int64_t index = -1;  // >= 0: an array index
};

std::vector<PathStep> split_path(const std::string& path, const std::string& where) {
  std::vector<PathStep> steps;
  std::size_t i = 0;
  auto bad = [&](const std::string& why) -> ConfigError {
    return ConfigError(where, "bad parameter path " + Json(path).dump() + ": " + why);
  };
  while (i < path.size()) {
    const std::size_t end = path.find_first_of(".[", i);
    const std::string key = path.substr(i, end == std::string::npos ? std::string::npos : end - i);
    if (key.empty()) throw bad("an empty name");
    steps.push_back({key});
    i = end == std::string::npos ? path.size() : end;
    while (i < path.size() && path[i] == '[') {
      const std::size_t close = path.find(']', i);
      if (close == std::string::npos || close == i + 1) throw bad("an unclosed or empty [index]");
      const std::string digits = path.substr(i + 1, close - i - 1);
      if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) || digits.size() > 6)
        throw bad("[" + digits + "] is not an array index");
      steps.push_back({"", std::stoll(digits)});
      i = close + 1;
    }
    if (i < path.size()) {
      if (path[i] != '.') throw bad("expected '.' or '[' after " + Json(key).dump());
      if (++i == path.size()) throw bad("ends with '.'");
    }
  }
  if (steps.empty()) throw bad("empty");
  return steps;
}

// The value at `path` in `j`, or null when the path leads nowhere.
const Json* find(const Json& j, const std::vector<PathStep>& steps) {
  const Json* at = &j;
  for (const PathStep& s : steps) {
    if (s.index >= 0) {
      if (!at->is_array() || s.index >= static_cast<std::int64_t>(at->size())) return nullptr;
      at = &(*at)[static_cast<std::size_t>(s.index)];
    } else {
      if (!at->is_object() || !at->contains(s.key)) return nullptr;
      at = &(*at)[s.key];
    }
  }
  return at;
}

bool same_type(const Json& a, const Json& b) {
  return (a.is_number() && b.is_number()) || (a.is_string() && b.is_string()) ||
         (a.is_boolean() && b.is_boolean());
}

// The decimal exponent that makes `x` a whole number (0.25 -> 2), up to 12.
int decimals(double x) {
  for (int d = 0; d <= 12; ++d) {
    const double scaled = x * std::pow(10.0, d);
    if (std::fabs(scaled - std::round(scaled)) <= 1e-9 * std::max(1.0, std::fabs(scaled))) return d;
  }
  return -1;
}

double number_at(const Json& j, const std::string& path) {
  if (!j.is_number() || !std::isfinite(j.get<double>())) throw ConfigError(path, "expected a finite number, got " + j.dump());
  return j.get<double>();
}

// [lo, hi] of a distribution or range: two finite numbers, lo <= hi.
std::pair<double, double> bounds(const Json& j, const std::string& path) {
  if (!j.is_array() || j.size() != 2) throw ConfigError(path, "expected [low, high], got " + j.dump());
  const double lo = number_at(j[0], path + "[0]"), hi = number_at(j[1], path + "[1]");
  if (lo > hi) throw ConfigError(path, "low " + j[0].dump() + " is above high " + j[1].dump());
  return {lo, hi};
}

std::vector<Json> range_points(const Json& range, const Json& step, const std::string& where) {
  const auto [lo, hi] = bounds(range, where + ".range");
  const double s = number_at(step, where + ".step");
  if (s <= 0) throw ConfigError(where + ".step", "expected a positive number, got " + step.dump());
  const bool integers = range[0].is_number_integer() && range[1].is_number_integer() && step.is_number_integer();
  const int d = std::max(decimals(lo), decimals(s));
  if (decimals(lo) < 0 || decimals(s) < 0)
    throw ConfigError(where, "range start and step need at most 12 decimals");
  const double scale = std::pow(10.0, d);
  const double lo_units = std::round(lo * scale), step_units = std::round(s * scale), hi_units = hi * scale;
  if (std::fabs(lo_units) > 1e15 || std::fabs(hi_units) > 1e15)
    throw ConfigError(where + ".range", "values too large for exact steps");
  const double whole = std::round((hi_units - lo_units) / step_units);
  if (std::fabs(lo_units + whole * step_units - hi_units) > 1e-6 * std::max(1.0, std::fabs(hi_units)))
    throw ConfigError(where + ".range", "the end " + range[1].dump() + " is not the start " + range[0].dump() +
                                            " plus a whole number of steps of " + step.dump());
  if (whole + 1 > 1e6) throw ConfigError(where, "more than 1,000,000 points");
  std::vector<Json> points;
  const auto n = static_cast<std::int64_t>(whole) + 1;
  for (std::int64_t k = 0; k < n; ++k) {
    const double units = lo_units + static_cast<double>(k) * step_units;  // exact: whole numbers below 2^53
    if (integers)
      points.emplace_back(static_cast<std::int64_t>(units));
    else
      points.emplace_back(units / scale);  // one rounding: the double nearest the decimal
  }
  return points;
}

std::vector<Json> array_points(const Json& j, const std::string& path) {
  if (!j.is_array() || j.empty()) throw ConfigError(path, "expected a non-empty array of values, got " + j.dump());
  return {j.begin(), j.end()};
}

const std::vector<std::string> kDimensionKeys = {"path", "values", "range", "step", "uniform", "log_uniform",
                                                 "choice", "integer"};

Dimension parse_dimension(const Json& j, const std::string& where) {
  if (!j.is_object()) throw ConfigError(where, "expected an object {\"path\": ..., \"values\": [...]}, got " + j.dump());
  for (const auto& [key, v] : j.items())
    if (std::find(kDimensionKeys.begin(), kDimensionKeys.end(), key) == kDimensionKeys.end())
      throw ConfigError(where + "." + key, "unknown key in a search dimension (allowed: path, values, range, "
                                           "step, uniform, log_uniform, choice, integer)");
  if (!j.contains("path") || !j["path"].is_string())
    throw ConfigError(where + ".path", "expected the path of a training parameter, e.g. \"optimizer.learning_rate\"");
  Dimension d;
  d.path = j["path"].get<std::string>();
  int kinds = 0;
  for (const char* k : {"values", "range", "uniform", "log_uniform", "choice"}) kinds += j.contains(k) ? 1 : 0;
  if (kinds != 1)
    throw ConfigError(where, "expected exactly one of values, range, uniform, log_uniform, choice");
  if (j.contains("step") && !j.contains("range")) throw ConfigError(where + ".step", "only a range takes a step");
  if (j.contains("integer") && !j.contains("uniform") && !j.contains("log_uniform"))
    throw ConfigError(where + ".integer", "only uniform and log_uniform take integer");
  if (j.contains("integer")) {
    if (!j["integer"].is_boolean()) throw ConfigError(where + ".integer", "expected true or false, got " + j["integer"].dump());
    d.integer = j["integer"].get<bool>();
  }
  if (j.contains("values")) {
    d.kind = Dimension::Kind::list;
    d.points = array_points(j["values"], where + ".values");
  } else if (j.contains("choice")) {
    d.kind = Dimension::Kind::choice;
    d.points = array_points(j["choice"], where + ".choice");
  } else if (j.contains("range")) {
    if (!j.contains("step")) throw ConfigError(where + ".step", "missing (a range needs a step)");
    d.kind = Dimension::Kind::range;
    d.points = range_points(j["range"], j["step"], where);
    std::tie(d.lo, d.hi) = bounds(j["range"], where + ".range");
    d.step = j["step"].get<double>();
  } else {
    const bool log = j.contains("log_uniform");
    d.kind = log ? Dimension::Kind::log_uniform : Dimension::Kind::uniform;
    const std::string key = log ? "log_uniform" : "uniform";
    std::tie(d.lo, d.hi) = bounds(j[key], where + "." + key);
    if (log && d.lo <= 0) throw ConfigError(where + "." + key, "log_uniform needs low > 0, got " + j[key].dump());
  }
  return d;
}

// The values a dimension's check tries: every point, or both ends.
std::vector<Json> probe_values(const Dimension& d) {
  if (d.finite()) return d.points;
  return {d.sample(0.0), d.sample(std::nextafter(1.0, 0.0))};
}

}  // namespace

const char* kind_name(Dimension::Kind k) noexcept {
  switch (k) {
    case Dimension::Kind::list: return "list";
    case Dimension::Kind::range: return "range";
    case Dimension::Kind::uniform: return "uniform";
    case Dimension::Kind::log_uniform: return "log_uniform";
    case Dimension::Kind::choice: return "choice";
  }
  return "?";
}

Json Dimension::sample(double u) const {
  if (finite()) {
    const auto n = points.size();
    return points[std::min(n - 1, static_cast<std::size_t>(u * static_cast<double>(n)))];
  }
  const double x = kind == Kind::uniform ? lo + u * (hi - lo)
                                         : std::exp(std::log(lo) + u * (std::log(hi) - std::log(lo)));
  if (integer) return static_cast<std::int64_t>(std::llround(std::clamp(x, lo, hi)));
  return std::clamp(x, lo, hi);
}

Json Dimension::describe() const {
  Json j;
  j["path"] = path;
  j["kind"] = kind_name(kind);
  if (kind == Kind::range) {
    j["min"] = points.front();
    j["max"] = points.back();
    j["step"] = step;
  }
  if (finite()) {
    j["values"] = points;
  } else {
    j["min"] = lo;
    j["max"] = hi;
    if (integer) j["integer"] = true;
  }
  return j;
}

std::uint64_t SearchSpace::grid_size() const {
  std::uint64_t n = 1;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    MAGMADNN_CHECK(dims[k].finite(), ValueError,
                   "space[" << k << "] (" << dims[k].path << ") is " << kind_name(dims[k].kind)
                            << ": a grid needs values, a range or a choice");
    if (n > (std::uint64_t{1} << 40) / dims[k].points.size()) {
      std::ostringstream os;
      os << "the grid has more than 2^40 points (";
      for (std::size_t i = 0; i < dims.size(); ++i) os << (i ? " x " : "") << dims[i].points.size();
      os << " values): give fewer values, or use a random or asha searcher";
      throw ConfigError("space", os.str());
    }
    n *= dims[k].points.size();
  }
  return n;
}

Json SearchSpace::grid_point(std::uint64_t index) const {
  std::vector<std::size_t> digit(dims.size());
  for (std::size_t k = dims.size(); k-- > 0;) {
    digit[k] = static_cast<std::size_t>(index % dims[k].points.size());
    index /= dims[k].points.size();
  }
  Json p = Json::object();
  for (std::size_t k = 0; k < dims.size(); ++k) p[dims[k].path] = dims[k].points[digit[k]];
  return p;
}

Json SearchSpace::random_point(std::uint64_t seed, std::uint64_t counter) const {
  Json p = Json::object();
  for (std::size_t k = 0; k < dims.size(); ++k) p[dims[k].path] = dims[k].sample(uniform01(seed, counter, k));
  return p;
}

void set_param(Json& config, const std::string& path, const Json& value) {
  const std::vector<PathStep> steps = split_path(path, path);
  Json* at = &config;
  for (const PathStep& s : steps) {
    if (s.index >= 0) {
      MAGMADNN_CHECK(at->is_array() && s.index < static_cast<std::int64_t>(at->size()), ValueError,
                     "set_param: " << path << ": no element " << s.index);
      at = &(*at)[static_cast<std::size_t>(s.index)];
    } else {
      if (at->is_null()) *at = Json::object();
      MAGMADNN_CHECK(at->is_object(), ValueError, "set_param: " << path << ": " << s.key << " is not in an object");
      at = &(*at)[s.key];
    }
  }
  *at = value;
}

Json apply_params(const Json& base, const Json& params) {
  Json config = base;
  for (const auto& [path, value] : params.items()) set_param(config, path, value);
  return config;
}

SearchSpace parse_space(const Json& j, const std::string& where, const Json& base) {
  if (!j.is_array()) throw ConfigError(where, "expected an array of dimensions, got " + j.dump());
  const Json complete = run::to_json(run::parse_config(base));
  SearchSpace space;
  for (std::size_t k = 0; k < j.size(); ++k) {
    const std::string at = where + "[" + std::to_string(k) + "]";
    Dimension d = parse_dimension(j[k], at);
    for (const Dimension& other : space.dims)
      if (other.path == d.path) throw ConfigError(at + ".path", "the parameter " + Json(d.path).dump() + " is searched twice");
    const Json* current = find(complete, split_path(d.path, at + ".path"));
    if (current == nullptr || current->is_object() || current->is_array())
      throw ConfigError(at + ".path", Json(d.path).dump() + " is not a training parameter of the train config "
                                      "(a path to a number, string or boolean of its complete form)");
    const std::vector<Json> probes = probe_values(d);
    for (std::size_t v = 0; v < probes.size(); ++v) {
      if (!same_type(probes[v], *current))
        throw ConfigError(at, "value " + probes[v].dump() + " does not fit " + d.path + " (the config holds " +
                                  current->dump() + ")");
      Json config = base;
      set_param(config, d.path, probes[v]);
      try {
        run::parse_config(config);
      } catch (const ConfigError& e) {
        throw ConfigError(at, "value " + probes[v].dump() + " is refused by the train config: " + e.what());
      }
    }
    space.dims.push_back(std::move(d));
  }
  return space;
}

}  // namespace magmadnn::tune
