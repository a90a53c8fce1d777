#include "tune_results.h"

#include <cmath>
#include <limits>
#include <map>

#include "magmadnn/core/errors.h"
#include "run_folder.h"

namespace magmadnn::cli {
namespace {

// The engine writes a flat document; anything deeper is not a results file,
// and refusing it early keeps a hostile file from exhausting the stack.
constexpr int kMaxDepth = 64;

// Every check names the file and the JSON path of the value it refuses.
class Checker {
 public:
  explicit Checker(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    MAGMADNN_THROW(IOError, file_ << ": " << (path.empty() ? "(document)" : path) << ": " << what);
  }
  static std::string shown(const Json& j) {
    std::string s = j.dump();
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
  }
  const Json& object(const Json& j, const std::string& path) const {
    if (!j.is_object()) fail(path, "expected an object, got " + shown(j));
    return j;
  }
  const Json& array(const Json& j, const std::string& path) const {
    if (!j.is_array()) fail(path, "expected an array, got " + shown(j));
    return j;
  }
  const Json& required(const Json& obj, const std::string& key, const std::string& path) const {
    if (!obj.contains(key)) fail(join(path, key), "missing");
    return obj[key];
  }
  std::string string(const Json& j, const std::string& path) const {
    if (!j.is_string()) fail(path, "expected a string, got " + shown(j));
    return j.get<std::string>();
  }
  std::int64_t integer(const Json& j, const std::string& path) const {
    if (!j.is_number_integer() || (j.is_number_unsigned() && j.get<std::uint64_t>() > INT64_MAX)) {
      fail(path, "expected an integer, got " + shown(j));
    }
    return j.get<std::int64_t>();
  }
  // Absent or null: NaN.
  double number(const Json& obj, const std::string& key, const std::string& path) const {
    if (!obj.contains(key) || obj[key].is_null()) return kNaN;
    if (!obj[key].is_number()) fail(join(path, key), "expected a number or null, got " + shown(obj[key]));
    return obj[key].get<double>();
  }
  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

 private:
  std::string file_;
};

Json parse(const std::filesystem::path& file) {
  std::error_code ec;
  MAGMADNN_CHECK(std::filesystem::is_regular_file(file, ec), IOError,
                 file.string() << ": no such file (a tune run writes results.json into its --out folder)");
  const std::string text = read_text_file(file.string());
  try {
    return Json::parse(text, [&](int depth, Json::parse_event_t event, Json&) {
      if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
          depth >= kMaxDepth) {
        MAGMADNN_THROW(IOError, file.string() << ": nests arrays/objects more than " << kMaxDepth << " levels deep");
      }
      return true;
    });
  } catch (const Json::exception& e) {
    MAGMADNN_THROW(IOError, file.string() << ": invalid JSON: " << e.what());
  }
}

TrialStatus status_of(const Checker& c, const Json& j, const std::string& path) {
  const std::string s = c.string(j, path);
  if (s == "ok") return TrialStatus::ok;
  if (s == "failed") return TrialStatus::failed;
  if (s == "pruned") return TrialStatus::pruned;
  c.fail(path, "expected one of \"ok\", \"failed\", \"pruned\", got " + Checker::shown(j));
}

TuneTrial trial_of(const Checker& c, const Json& j, const std::string& path) {
  c.object(j, path);
  TuneTrial t;
  t.index = c.integer(c.required(j, "index", path), path + ".index");
  if (t.index < 0) c.fail(path + ".index", "expected an index >= 0, got " + std::to_string(t.index));
  t.params = c.object(c.required(j, "params", path), path + ".params");
  t.status = status_of(c, c.required(j, "status", path), path + ".status");
  t.attempts = c.number(j, "attempts", path);
  t.worker = c.number(j, "worker", path);
  t.seconds = c.number(j, "seconds", path);
  t.objective = c.number(j, "objective", path);
  if (j.contains("final") && !j["final"].is_null()) {
    const std::string fp = path + ".final";
    const Json& f = c.object(j["final"], fp);
    t.final_loss = c.number(f, "loss", fp);
    t.final_accuracy = c.number(f, "accuracy", fp);
    t.test_accuracy = c.number(f, "test_accuracy", fp);
  }
  // A failed trial has no result (files written before this was so held 0.0).
  if (t.status == TrialStatus::failed) t.final_loss = t.final_accuracy = t.test_accuracy = kNaN;
  if (j.contains("curve") && !j["curve"].is_null()) {
    const Json& curve = c.array(j["curve"], path + ".curve");
    for (std::size_t e = 0; e < curve.size(); ++e) {
      const std::string ep = path + ".curve[" + std::to_string(e) + "]";
      const Json& p = c.object(curve[e], ep);
      TrialPoint point;
      point.epoch = c.number(p, "epoch", ep);
      if (!std::isfinite(point.epoch)) c.fail(ep + ".epoch", "missing (every curve point needs its epoch)");
      point.loss = c.number(p, "loss", ep);
      point.accuracy = c.number(p, "accuracy", ep);
      point.seconds = c.number(p, "seconds", ep);
      t.curve.push_back(point);
    }
  }
  if (j.contains("error") && !j["error"].is_null()) t.error = c.string(j["error"], path + ".error");
  return t;
}

}  // namespace

const char* status_name(TrialStatus s) {
  return s == TrialStatus::ok ? "ok" : s == TrialStatus::failed ? "failed" : "pruned";
}

const TuneTrial* TuneResults::best_trial() const {
  if (!best) return nullptr;
  for (const auto& t : trials) {
    if (t.index == *best) return &t;
  }
  return nullptr;
}

bool TuneResults::minimize() const {
  const std::string direction = objective.is_object() && objective.contains("direction") &&
                                        objective["direction"].is_string()
                                    ? objective["direction"].get<std::string>()
                                    : "";
  if (direction == "minimize" || direction == "maximize") return direction == "minimize";
  // The engine chose the best trial, so its objective says which way is better.
  const TuneTrial* b = best_trial();
  if (b && b->status == TrialStatus::ok && std::isfinite(b->objective)) {
    bool is_min = true, is_max = true;
    for (const auto& t : trials) {
      if (t.status != TrialStatus::ok || !std::isfinite(t.objective)) continue;
      is_min = is_min && b->objective <= t.objective;
      is_max = is_max && b->objective >= t.objective;
    }
    if (is_min != is_max) return is_min;
  }
  const std::string kind = objective.value("kind", std::string());
  return kind.find("accuracy") == std::string::npos;
}

TuneResults read_tune_results(const std::filesystem::path& file) {
  const Checker c(file.string());
  const Json doc = parse(file);
  c.object(doc, "");
  TuneResults r;
  r.file = file.string();
  r.objective = c.object(c.required(doc, "objective", ""), "objective");
  c.string(c.required(r.objective, "kind", "objective"), "objective.kind");
  if (r.objective.contains("direction")) {
    const std::string d = c.string(r.objective["direction"], "objective.direction");
    if (d != "minimize" && d != "maximize") {
      c.fail("objective.direction", "expected \"minimize\" or \"maximize\", got " + Checker::shown(d));
    }
  }
  if (doc.contains("searcher") && !doc["searcher"].is_null()) r.searcher = c.string(doc["searcher"], "searcher");
  if (doc.contains("seed") && !doc["seed"].is_null()) r.seed = c.integer(doc["seed"], "seed");

  const Json& dims = c.array(c.required(doc, "dimensions", ""), "dimensions");
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::string path = "dimensions[" + std::to_string(i) + "]";
    const Json& d = c.object(dims[i], path);
    TuneDimension dim{c.string(c.required(d, "path", path), path + ".path"),
                      c.string(c.required(d, "kind", path), path + ".kind"), d};
    if (dim.path.empty()) c.fail(path + ".path", "expected a parameter path, got \"\"");
    r.dimensions.push_back(std::move(dim));
  }

  const Json& trials = c.array(c.required(doc, "trials", ""), "trials");
  std::map<std::int64_t, std::size_t> seen;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const std::string path = "trials[" + std::to_string(i) + "]";
    r.trials.push_back(trial_of(c, trials[i], path));
    const auto [at, fresh] = seen.emplace(r.trials.back().index, i);
    if (!fresh) {
      c.fail(path + ".index", std::to_string(r.trials.back().index) + " is also the index of trials[" +
                                  std::to_string(at->second) + "]");
    }
  }
  if (doc.contains("best") && !doc["best"].is_null()) {
    r.best = c.integer(doc["best"], "best");
    if (!seen.count(*r.best)) c.fail("best", std::to_string(*r.best) + " is not the index of any trial");
  }
  return r;
}

}  // namespace magmadnn::cli
