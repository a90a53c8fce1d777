#include "magmadnn/tune/trial.h"

#include <limits>
#include <type_traits>

#include "magmadnn/core/errors.h"

namespace magmadnn::tune {
namespace {

// A number of the wire format: JSON writes NaN and infinities as null.
double number(const Json& j) { return j.is_null() ? std::numeric_limits<double>::quiet_NaN() : j.get<double>(); }

// An integer of the wire format. A float is refused: converting one outside
// the integer's range is undefined.
template <typename T>
T integer(const Json& v, const char* key) {
  // The JSON library's own error type, as for any other field of the wrong type.
  if (!v.is_number_integer())
    throw Json::type_error::create(302, "\"" + std::string(key) + "\": expected an integer, got " + v.dump(), &v);
  return v.get<T>();
}

template <typename T>
T get_or(const Json& j, const char* key, T def) {
  if (!j.contains(key) || j[key].is_null()) return def;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return integer<T>(j[key], key);
  else return j[key].get<T>();
}

}  // namespace

Json Trial::to_json() const {
  Json j;
  j["index"] = index;
  j["config"] = config;
  j["rung"] = rung;
  j["attempt"] = attempt;
  j["params"] = params;
  j["train"] = train_config;
  return j;
}

Trial Trial::from_json(const Json& j) {
  Trial t;
  t.index = integer<std::int64_t>(j.at("index"), "index");
  t.config = get_or<std::int64_t>(j, "config", t.index);
  t.rung = get_or<int>(j, "rung", 0);
  t.attempt = get_or<int>(j, "attempt", 1);
  t.params = j.contains("params") ? j["params"] : Json::object();
  if (j.contains("train")) t.train_config = j["train"];
  return t;
}

Json TrialOutcome::to_json() const {
  Json j;
  j["ok"] = ok;
  if (!ok) j["error"] = error;
  // A failed trial has no result: null, never a 0.0 that sorts first by loss.
  j["loss"] = ok ? Json(loss) : Json(nullptr);
  j["accuracy"] = ok ? Json(accuracy) : Json(nullptr);
  j["test_accuracy"] = test_accuracy ? Json(*test_accuracy) : Json(nullptr);
  j["seconds"] = seconds;
  Json c = Json::array();
  for (const CurvePoint& p : curve) c.push_back({{"epoch", p.epoch}, {"loss", p.loss}, {"accuracy", p.accuracy},
                                                 {"seconds", p.seconds}});
  j["curve"] = std::move(c);
  if (!extra.empty()) j["extra"] = extra;
  return j;
}

TrialOutcome TrialOutcome::from_json(const Json& j) {
  TrialOutcome o;
  o.ok = get_or<bool>(j, "ok", true);
  o.error = get_or<std::string>(j, "error", "");
  const double none = o.ok ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  o.loss = j.contains("loss") ? number(j["loss"]) : none;
  o.accuracy = j.contains("accuracy") ? number(j["accuracy"]) : none;
  if (j.contains("test_accuracy") && !j["test_accuracy"].is_null()) o.test_accuracy = j["test_accuracy"].get<double>();
  o.seconds = get_or<double>(j, "seconds", -1.0);
  if (j.contains("curve"))
    for (const Json& p : j["curve"])
      o.curve.push_back({integer<std::int64_t>(p.at("epoch"), "epoch"), number(p.at("loss")), number(p.at("accuracy")),
                         number(p.at("seconds"))});
  if (j.contains("extra")) o.extra = j["extra"];
  return o;
}

Json TrialRecord::to_json() const {
  Json j;
  j["index"] = trial.index;
  j["params"] = trial.params;
  j["status"] = status;
  j["attempts"] = attempts;
  j["worker"] = worker;
  j["seconds"] = outcome.seconds < 0 ? 0.0 : outcome.seconds;
  j["objective"] = objective ? Json(*objective) : Json(nullptr);
  // A failed trial's metrics are null (empty in results.csv): whatever its
  // outcome holds (0.0 by default, or a diverged last epoch) is no result.
  if (status == "failed") {
    j["final"] = {{"loss", nullptr}, {"accuracy", nullptr}, {"test_accuracy", nullptr}};
  } else {
    j["final"] = {{"loss", outcome.loss}, {"accuracy", outcome.accuracy},
                  {"test_accuracy", outcome.test_accuracy ? Json(*outcome.test_accuracy) : Json(nullptr)}};
  }
  Json c = TrialOutcome{outcome}.to_json()["curve"];
  j["curve"] = std::move(c);
  if (status == "failed") j["error"] = outcome.error;
  if (!outcome.extra.empty()) j["extra"] = outcome.extra;
  j["config"] = trial.config;
  j["rung"] = trial.rung;
  if (trial.train_config.is_object() && trial.train_config.contains("epochs")) j["epochs"] = trial.train_config["epochs"];
  return j;
}

}  // namespace magmadnn::tune
