#include "magmadnn/tune/objective.h"

#include <algorithm>
#include <cmath>
#include <limits>

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

Objective Objective::parse(const Json& j, const std::string& where, const ObjectiveCallbacks& callbacks) {
  const std::map<std::string, std::vector<std::string>> keys = {
      {"accuracy", {"kind"}},  {"loss", {"kind"}},
      {"time", {"kind"}},      {"weighted", {"kind", "accuracy_weight", "time_weight"}},
      {"loss_area", {"kind", "threshold", "axis"}}, {"callback", {"kind", "name"}}};
  if (!j.is_object()) throw ConfigError(where, "expected an object {\"kind\": ...}, got " + j.dump());
  if (!j.contains("kind") || !j["kind"].is_string() || keys.count(j["kind"].get<std::string>()) == 0)
    throw ConfigError(where + ".kind", "expected one of \"accuracy\", \"loss\", \"time\", \"weighted\", "
                                       "\"loss_area\", \"callback\", got " + (j.contains("kind") ? j["kind"].dump() : "nothing"));
  Objective o;
  o.kind_ = j["kind"].get<std::string>();
  const Settings s(j, where, keys.at(o.kind_));
  const double big = std::numeric_limits<double>::max();
  if (o.kind_ == "accuracy" || o.kind_ == "weighted") o.maximize_ = true;
  if (o.kind_ == "weighted") {
    o.accuracy_weight_ = s.number("accuracy_weight", 1.0, 0.0, big);
    o.time_weight_ = s.number("time_weight", 0.0, 0.0, big);
  }
  if (o.kind_ == "loss_area") {
    if (!s.has("threshold")) throw ConfigError(s.at("threshold"), "missing (the loss a curve's minimum must reach)");
    o.threshold_ = s.number("threshold", 0.0, -big, big);
    if (s.has("axis")) {
      if (j["axis"] != "seconds" && j["axis"] != "epochs")
        throw ConfigError(s.at("axis"), "expected \"seconds\" or \"epochs\", got " + j["axis"].dump());
      o.axis_ = j["axis"].get<std::string>();
    }
  }
  if (o.kind_ == "callback") {
    if (!s.has("name") || !j["name"].is_string())
      throw ConfigError(s.at("name"), "expected the name of a registered callback");
    o.name_ = j["name"].get<std::string>();
    const auto it = callbacks.find(o.name_);
    if (it == callbacks.end())
      throw ConfigError(s.at("name"), "no objective callback " + j["name"].dump() +
                                          " is registered (the magmadnn command registers none; a program "
                                          "calling the library passes them to parse_tune_config)");
    o.function_ = it->second.function;
    o.maximize_ = it->second.maximize;
  }
  return o;
}

Objective Objective::callback(std::string name, ObjectiveCallback cb) {
  Objective o;
  o.kind_ = "callback";
  o.name_ = std::move(name);
  o.function_ = std::move(cb.function);
  o.maximize_ = cb.maximize;
  return o;
}

std::optional<double> Objective::evaluate(const TrialRecord& r) const {
  if (r.status == "failed" || !r.outcome.ok) return std::nullopt;
  const TrialOutcome& o = r.outcome;
  std::optional<double> v;
  if (kind_ == "accuracy") v = o.accuracy;
  else if (kind_ == "loss") v = o.loss;
  else if (kind_ == "time") v = o.seconds;
  else if (kind_ == "weighted") v = accuracy_weight_ * o.accuracy - time_weight_ * o.seconds;
  else if (kind_ == "loss_area") {
    if (o.curve.empty()) return std::nullopt;
    double lowest = o.curve.front().loss;
    for (const CurvePoint& p : o.curve) lowest = std::min(lowest, p.loss);
    if (!(lowest <= threshold_)) return std::nullopt;  // also NaN: a diverged run
    v = loss_area(o.curve, axis_ == "epochs");
  } else if (function_) {
    v = function_(r);
  }
  if (v && !std::isfinite(*v)) return std::nullopt;
  return v;
}

bool Objective::better(const std::optional<double>& a, const std::optional<double>& b) const {
  if (!a) return false;
  if (!b) return true;
  return maximize_ ? *a > *b : *a < *b;
}

Json Objective::describe() const {
  Json j;
  j["kind"] = kind_;
  j["direction"] = maximize_ ? "maximize" : "minimize";
  if (kind_ == "weighted") {
    j["accuracy_weight"] = accuracy_weight_;
    j["time_weight"] = time_weight_;
  }
  if (kind_ == "loss_area") {
    j["threshold"] = threshold_;
    j["axis"] = axis_;
  }
  if (kind_ == "callback") j["name"] = name_;
  return j;
}

}  // namespace magmadnn::tune
