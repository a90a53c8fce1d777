/// @file space.h
/// The search space: the dimensions of a hyperparameter search, each one
/// training parameter of the run specification (run/spec.h) addressed by its
/// path in the train config ("optimizer.learning_rate", "batch_size",
/// "layers[1].units"), with the values it may take:
///
///   {"path": "batch_size",              "values": [16, 32, 64]}          list
///   {"path": "optimizer.learning_rate", "range": [0.1, 0.9], "step": 0.1} range
///   {"path": "optimizer.weight_decay",  "log_uniform": [1e-5, 1e-2]}     distribution
///   {"path": "optimizer.momentum",      "uniform": [0, 0.99]}
///   {"path": "optimizer.type",          "choice": ["sgd", "adam"]}
///   (uniform and log_uniform take "integer": true to round each draw)
///
/// A range is integer-indexed: its points are lo + k * step for k = 0 .. n-1,
/// computed in whole units of the finest decimal of lo and step and divided
/// once, so each point is the double nearest its decimal value and floats
/// never drift (0.1 .. 0.9 by 0.1 is 9 points, the last == 0.9). A range
/// whose end is not a whole number of steps from its start is refused.
///
/// Guarantees: parse_space either returns a space whose every point (lists,
/// ranges, choices; both ends of a distribution) gives a train config that
/// run::parse_config accepts, or throws run::ConfigError whose message
/// starts with the JSON path of the mistake ("space[1].step: ...").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "magmadnn/run/spec.h"

namespace magmadnn::tune {

using run::Json;

struct Dimension {
  enum class Kind { list, range, uniform, log_uniform, choice };
  std::string path;  ///< in the train config, e.g. "optimizer.learning_rate"
  Kind kind = Kind::list;
  std::vector<Json> points;  ///< list, range, choice: every value, in order
  double lo = 0, hi = 0;     ///< uniform, log_uniform (range: its ends)
  double step = 0;           ///< range
  bool integer = false;      ///< uniform, log_uniform: draws rounded to integers

  /// Whether the dimension has a finite set of points (a grid can use it).
  bool finite() const noexcept { return kind == Kind::list || kind == Kind::range || kind == Kind::choice; }
  /// The value for a uniform draw u in [0, 1): a point chosen evenly, or a
  /// draw of the distribution.
  Json sample(double u) const;
  /// results.json's description: {"path", "kind", and the kind's own keys}.
  Json describe() const;
};

const char* kind_name(Dimension::Kind k) noexcept;

struct SearchSpace {
  std::vector<Dimension> dims;

  /// Points of the grid over every dimension (ValueError if one is not finite,
  /// naming it); 1 for an empty space.
  std::uint64_t grid_size() const;
  /// Grid point `index` (< grid_size()): mixed radix, the last dimension
  /// varying fastest. {path: value, ...} in dimension order.
  Json grid_point(std::uint64_t index) const;
  /// The random point for (seed, counter): dimension d draws uniform01(seed, counter, d).
  Json random_point(std::uint64_t seed, std::uint64_t counter) const;
};

/// Parses `j` (an array of dimensions) at JSON path `where` ("space"),
/// checking every path and value against the train config `base` (see the
/// file comment).
SearchSpace parse_space(const Json& j, const std::string& where, const Json& base);

/// `config` with the value at training-parameter `path` set to `value`
/// (objects on the way are created; array indices must exist).
void set_param(Json& config, const std::string& path, const Json& value);
/// `base` with every {path: value} of `params` set.
Json apply_params(const Json& base, const Json& params);

}  // namespace magmadnn::tune
