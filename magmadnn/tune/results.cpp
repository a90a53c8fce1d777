#include "magmadnn/tune/results.h"

#include <filesystem>
#include <sstream>

#include "magmadnn/io/atomic_file.h"

namespace magmadnn::tune {
namespace {

// A CSV field: quoted when it holds a comma, a quote or a line break.
std::string field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string cell(const Json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return field(v.get<std::string>());
  return field(v.dump());
}

}  // namespace

Json results_json(const TuneConfig& config, const SearchResult& result) {
  Json j;
  j["objective"] = config.context.objective.describe();
  j["searcher"] = result.searcher_name;
  j["searcher_settings"] = result.searcher;
  j["seed"] = config.context.seed;
  j["best"] = result.best ? Json(*result.best) : Json(nullptr);
  Json dims = Json::array();
  for (const Dimension& d : config.context.space.dims) dims.push_back(d.describe());
  j["dimensions"] = std::move(dims);
  Json trials = Json::array();
  for (const TrialRecord& r : result.trials) trials.push_back(r.to_json());
  j["trials"] = std::move(trials);
  j["sessions"] = result.sessions;
  j["workers"] = result.workers;
  j["search_seconds"] = result.seconds;
  return j;
}

std::string results_csv(const TuneConfig& config, const SearchResult& result) {
  std::ostringstream os;
  os << "index,status,attempts,worker,seconds,objective";
  for (const Dimension& d : config.context.space.dims) os << ',' << field(d.path);
  os << ",loss,accuracy,test_accuracy,epochs,rung,error\n";
  for (const TrialRecord& r : result.trials) {
    const Json t = r.to_json();
    os << t["index"] << ',' << t["status"].get<std::string>() << ',' << t["attempts"] << ',' << t["worker"] << ','
       << cell(t["seconds"]) << ',' << cell(t["objective"]);
    for (const Dimension& d : config.context.space.dims)
      os << ',' << (r.trial.params.contains(d.path) ? cell(r.trial.params[d.path]) : "");
    os << ',' << cell(t["final"]["loss"]) << ',' << cell(t["final"]["accuracy"]) << ','
       << cell(t["final"]["test_accuracy"]) << ',' << (t.contains("epochs") ? cell(t["epochs"]) : "") << ','
       << t["rung"] << ',' << (t.contains("error") ? cell(t["error"]) : "") << '\n';
  }
  return os.str();
}

void write_results(const std::string& dir, const TuneConfig& config, const SearchResult& result) {
  const std::filesystem::path d(dir);
  io::write_file_atomic((d / "results.json").string(), results_json(config, result).dump(2) + "\n");
  io::write_file_atomic((d / "results.csv").string(), results_csv(config, result));
  if (result.best) {
    for (const TrialRecord& r : result.trials)
      if (r.trial.index == *result.best)
        io::write_file_atomic((d / "best.json").string(), r.trial.train_config.dump(2) + "\n");
  }
}

}  // namespace magmadnn::tune
