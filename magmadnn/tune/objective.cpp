#include "magmadnn/tune/objective.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "magmadnn/core/registry.h"
#include "magmadnn/tune/settings.h"

namespace magmadnn::tune {
namespace {

using run::ConfigError;

}  // namespace

double loss_area(const std::vector<CurvePoint>& curve, bool by_epochs) {
  double area = 0, x_prev = 0;
  for (const CurvePoint& p : curve) {
    const double x = by_epochs ? static_cast<double>(p.epoch) : p.seconds;
    area += p.loss * (x - x_prev);
    x_prev = x;
  }
  return area;
}

namespace {

NamedRegistry<ObjectiveKind>& registry() {
  static NamedRegistry<ObjectiveKind> r("objective kind");
  return r;
}

// -- the built-in kinds ------------------------------------------------------------------------

ObjectiveSetup make_accuracy(const Settings&, const Json&, const ObjectiveCallbacks&) {
  return {[](const TrialRecord& r) -> std::optional<double> { return r.outcome.accuracy; }, true};
}
ObjectiveSetup make_loss(const Settings&, const Json&, const ObjectiveCallbacks&) {
  return {[](const TrialRecord& r) -> std::optional<double> { return r.outcome.loss; }, false};
}
ObjectiveSetup make_time(const Settings&, const Json&, const ObjectiveCallbacks&) {
  return {[](const TrialRecord& r) -> std::optional<double> { return r.outcome.seconds; }, false};
}

ObjectiveSetup make_weighted(const Settings& s, const Json&, const ObjectiveCallbacks&) {
  const double big = std::numeric_limits<double>::max();
  const double accuracy_weight = s.number("accuracy_weight", 1.0, 0.0, big);
  const double time_weight = s.number("time_weight", 0.0, 0.0, big);
  return {[=](const TrialRecord& r) -> std::optional<double> {
            return accuracy_weight * r.outcome.accuracy - time_weight * r.outcome.seconds;
          },
          true, Json{{"accuracy_weight", accuracy_weight}, {"time_weight", time_weight}}};
}

ObjectiveSetup make_loss_area(const Settings& s, const Json& j, const ObjectiveCallbacks&) {
  const double big = std::numeric_limits<double>::max();
  if (!s.has("threshold")) throw ConfigError(s.at("threshold"), "missing (the loss a curve's minimum must reach)");
  const double threshold = s.number("threshold", 0.0, -big, big);
  std::string axis = "seconds";
  if (s.has("axis")) {
    if (j["axis"] != "seconds" && j["axis"] != "epochs")
      throw ConfigError(s.at("axis"), "expected \"seconds\" or \"epochs\", got " + j["axis"].dump());
    axis = j["axis"].get<std::string>();
  }
  const bool by_epochs = axis == "epochs";
  return {[=](const TrialRecord& r) -> std::optional<double> {
            const std::vector<CurvePoint>& curve = r.outcome.curve;
            if (curve.empty()) return std::nullopt;
            double lowest = curve.front().loss;
            for (const CurvePoint& p : curve) lowest = std::min(lowest, p.loss);
            if (!(lowest <= threshold)) return std::nullopt;  // also NaN: a diverged run
            return loss_area(curve, by_epochs);
          },
          false, Json{{"threshold", threshold}, {"axis", axis}}};
}

ObjectiveSetup make_callback(const Settings& s, const Json& j, const ObjectiveCallbacks& callbacks) {
  if (!s.has("name") || !j["name"].is_string())
    throw ConfigError(s.at("name"), "expected the name of a registered callback");
  const std::string name = j["name"].get<std::string>();
  const auto it = callbacks.find(name);
  if (it == callbacks.end())
    throw ConfigError(s.at("name"), "no objective callback " + j["name"].dump() +
                                        " is registered (the magmadnn command registers none; a program "
                                        "calling the library passes them to parse_tune_config)");
  return {it->second.function, it->second.maximize, Json{{"name", name}}};
}

const char* const kCallbackKind = "callback";

const ObjectiveRegistrar accuracy_kind(
    {"accuracy", "the last epoch's accuracy (validation, else training); maximized", 10, false, {}, &make_accuracy});
const ObjectiveRegistrar loss_kind({"loss", "the last epoch's loss; minimized", 20, true, {}, &make_loss});
const ObjectiveRegistrar time_kind({"time", "the trial's wall seconds; minimized", 30, false, {}, &make_time});
const ObjectiveRegistrar weighted_kind({"weighted", "accuracy_weight * accuracy - time_weight * seconds; maximized",
                                        40, false, {"accuracy_weight", "time_weight"}, &make_weighted});
const ObjectiveRegistrar loss_area_kind(
    {"loss_area",
     "the area under the loss curve (\"axis\": seconds or epochs) of a trial whose least loss is <= \"threshold\"; "
     "minimized",
     50, false, {"threshold", "axis"}, &make_loss_area});
const ObjectiveRegistrar callback_kind({kCallbackKind, "a C++ function passed under \"name\" (by a program calling "
                                                       "the library; the magmadnn command has none)",
                                        60, false, {"name"}, &make_callback});

}  // namespace

void register_objective(ObjectiveKind kind) {
  MAGMADNN_CHECK(kind.make != nullptr, ValueError, "objective kind '" << kind.name << "' registered without a factory");
  registry().add(std::move(kind));
}
std::vector<const ObjectiveKind*> objective_kinds() { return registry().entries(); }
const ObjectiveKind* find_objective(const std::string& name) { return registry().find(name); }
std::vector<std::string> objective_names() { return registry().names(); }

const ObjectiveKind& default_objective() {
  for (const ObjectiveKind* k : objective_kinds()) {
    if (k->is_default) return *k;
  }
  MAGMADNN_THROW(ValueError, "no objective kind is registered as the default");
}

Objective::Objective(std::string kind, ObjectiveSetup setup)
    : kind_(std::move(kind)), maximize_(setup.maximize), settings_(std::move(setup.settings)),
      value_(std::move(setup.value)) {}

Objective::Objective() : Objective(parse(Json{{"kind", default_objective().name}}, "objective")) {}

Objective Objective::parse(const Json& j, const std::string& where, const ObjectiveCallbacks& callbacks) {
  if (!j.is_object()) throw ConfigError(where, "expected an object {\"kind\": ...}, got " + j.dump());
  const ObjectiveKind* kind =
      j.contains("kind") && j["kind"].is_string() ? find_objective(j["kind"].get<std::string>()) : nullptr;
  if (kind == nullptr)
    throw ConfigError(where + ".kind", "expected one of " + names_text(objective_names(), ", ", "\"") + ", got " +
                                           (j.contains("kind") ? j["kind"].dump() : "nothing"));
  std::vector<std::string> allowed{"kind"};
  allowed.insert(allowed.end(), kind->keys.begin(), kind->keys.end());
  const Settings s(j, where, allowed);
  return Objective(kind->name, kind->make(s, j, callbacks));
}

Objective Objective::callback(std::string name, ObjectiveCallback cb) {
  return Objective(kCallbackKind, {std::move(cb.function), cb.maximize, Json{{"name", std::move(name)}}});
}

std::optional<double> Objective::evaluate(const TrialRecord& r) const {
  if (r.status == "failed" || !r.outcome.ok) return std::nullopt;
  std::optional<double> v;
  if (value_) v = value_(r);
  if (v && !std::isfinite(*v)) return std::nullopt;
  return v;
}

bool Objective::better(const std::optional<double>& a, const std::optional<double>& b) const {
  if (!a) return false;
  if (!b) return true;
  return maximize_ ? *a > *b : *a < *b;
}

Json Objective::describe() const {
  Json j = settings_;
  j["kind"] = kind_;
  j["direction"] = maximize_ ? "maximize" : "minimize";
  return j;
}

}  // namespace magmadnn::tune
