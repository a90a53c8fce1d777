/// @file objective.h
/// What a search optimizes: a number per finished trial, and whether more is
/// better. Kinds (the "objective" object of the tune config):
///   {"kind": "accuracy"}   the last epoch's accuracy (validation, else training); maximized
///   {"kind": "loss"}       the last epoch's loss; minimized  (the default)
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
#include <vector>

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

class Settings;

/// What an objective kind's factory makes of its settings.
struct ObjectiveSetup {
  /// The value of a finished trial that did not fail (nullopt: none).
  ObjectiveFunction value;
  bool maximize = false;
  /// results.json's settings of the objective, beside "kind" and "direction".
  Json settings = Json::object();
};

/// The registry of objective kinds: one entry per kind holds its name (the
/// "kind" key), one line of help, its place in lists, the settings it reads
/// and its factory. Objective::parse, the tune config's default and
/// `magmadnn tune --help` read it, so a new kind is one registrar
///
///   const ObjectiveRegistrar registrar({"mine", "one line of help", 70, false, {"weight"}, &make_mine});
///
/// in its own .cpp file and a test. The built-ins (objective.cpp), by order:
/// accuracy, loss (the default), time, weighted, loss_area, callback.
/// Requires: registration before main() or before the first parse that names
/// it; one kind is the default. Guarantees: another kind of a name already
/// registered is a ValueError (the identical declaration again is ignored).
struct ObjectiveKind {
  std::string name;
  std::string help;  ///< one line, for --help and docs
  int order = 0;     ///< lists show kinds by increasing order
  bool is_default = false;        ///< the kind of a tune config that gives no "objective"
  std::vector<std::string> keys;  ///< its settings, besides "kind"
  /// Reads the settings (`s` refuses unknown keys and checks ranges; `j` is
  /// the object) into a setup; ConfigError naming the path for a mistake.
  ObjectiveSetup (*make)(const Settings& s, const Json& j, const ObjectiveCallbacks& callbacks) = nullptr;
};

void register_objective(ObjectiveKind kind);
/// Every kind, by increasing order.
std::vector<const ObjectiveKind*> objective_kinds();
/// The kind called `name`; nullptr if there is none.
const ObjectiveKind* find_objective(const std::string& name);
std::vector<std::string> objective_names();
/// The default kind (ValueError if none is registered as the default).
const ObjectiveKind& default_objective();

/// Registers a kind from a namespace-scope constant in its .cpp file.
struct ObjectiveRegistrar {
  explicit ObjectiveRegistrar(ObjectiveKind kind) { register_objective(std::move(kind)); }
};

class Objective {
 public:
  /// The default kind's objective (default_objective(), with no settings).
  Objective();
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
  Objective(std::string kind, ObjectiveSetup setup);

  std::string kind_;
  bool maximize_ = false;
  Json settings_ = Json::object();
  ObjectiveFunction value_;
};

/// The area under `curve`'s loss against training seconds (by_epochs: epochs),
/// as a step sum (see the file comment).
double loss_area(const std::vector<CurvePoint>& curve, bool by_epochs = false);

}  // namespace magmadnn::tune
