/// @file objective.h
/// What a search optimizes: a number per finished trial, and whether more is
/// better. Kinds (the "objective" object of the tune config):
///   {"kind": "accuracy"}   the last epoch's accuracy (validation, else training); maximized
///   {"kind": "loss"}       the last epoch's loss; minimized
///   {"kind": "time"}       the trial's wall seconds; minimized
///   {"kind": "weighted", "accuracy_weight": 1, "time_weight": 0.001}
///                          accuracy_weight * accuracy - time_weight * seconds; maximized
///                          (the MagmaDNN paper's "combination of training duration and accuracy", §4.3)
///   {"kind": "loss_area", "threshold": 1.8, "axis": "seconds"|"epochs"}
///                          SHM-Learn-Dist §5: among the trials whose minimum loss is
///                          <= threshold, the least area under the loss curve against
///                          training time (or epochs); a trial above the threshold has no
///                          value (null) and cannot win; minimized
///   {"kind": "callback", "name": "mine"}
///                          a C++ function registered with the name (ObjectiveCallbacks)
/// The area is the step sum over epochs of loss_e * (x_e - x_{e-1}) with x_0 = 0,
/// so a one-epoch curve has an area too.
///
/// Guarantees: evaluate() of a failed trial, or of a loss that is not
/// finite, is null; better() orders null last.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "magmadnn/tune/trial.h"

namespace magmadnn::tune {

/// A user objective: the value of a finished trial, or nullopt to rule it out.
using ObjectiveFunction = std::function<std::optional<double>(const TrialRecord&)>;
struct ObjectiveCallback {
  ObjectiveFunction function;
  bool maximize = false;
};
/// The callbacks a tune config may name ({"kind": "callback", "name": ...}).
using ObjectiveCallbacks = std::map<std::string, ObjectiveCallback>;

class Objective {
 public:
  /// Parses the "objective" object at JSON path `where` (ConfigError naming the path).
  static Objective parse(const Json& j, const std::string& where, const ObjectiveCallbacks& callbacks = {});
  /// A user callback given in code.
  static Objective callback(std::string name, ObjectiveCallback cb);

  std::optional<double> evaluate(const TrialRecord& r) const;
  bool maximize() const noexcept { return maximize_; }
  /// Whether value a beats b (a null never beats anything; anything beats null).
  bool better(const std::optional<double>& a, const std::optional<double>& b) const;
  /// results.json's "objective": {"kind", "direction", and the kind's settings}.
  Json describe() const;
  const std::string& kind() const noexcept { return kind_; }

 private:
  std::string kind_ = "loss";
  bool maximize_ = false;
  double accuracy_weight_ = 1.0, time_weight_ = 0.0, threshold_ = 0.0;
  std::string axis_ = "seconds", name_;
  ObjectiveFunction function_;
};

/// The area under `curve`'s loss against training seconds (by_epochs: epochs),
/// as a step sum (see the file comment).
double loss_area(const std::vector<CurvePoint>& curve, bool by_epochs = false);

}  // namespace magmadnn::tune
