#include "compare.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "html.h"
#include "page_format.h"
#include "report_charts.h"
#include "run_folder.h"

namespace magmadnn::cli {
namespace fs = std::filesystem;

namespace {

// One colour per run (matplotlib's "tab10"); past ten the colours repeat dashed.
const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr std::size_t kColors = sizeof kPalette / sizeof kPalette[0];

using page::fixed4;
using page::grouped;
using page::number;
using page::percent;
using page::seconds;
using page::text;

// The summary's fields that label a run: "ranks" a whole number of ranks
// (ranks_of casts it to an integer, undefined for 1e300: seen while writing
// tests/fuzz's compare target), "strategy" a string.
// Both may be absent (one process, no strategy).
void check_summary_fields(const Json& s, const std::string& file) {
  MAGMADNN_CHECK(s.is_object(), IOError, file << ": expected a JSON object, got " << s.type_name());
  if (s.contains("ranks")) {
    const Json& n = s["ranks"];
    const bool whole = n.is_number() && n.get<double>() >= 1 && n.get<double>() <= 2147483647.0 &&
                       std::floor(n.get<double>()) == n.get<double>();
    MAGMADNN_CHECK(whole, IOError, file << ": ranks: expected a whole number in [1, 2147483647], got " << n.dump());
  }
  if (s.contains("strategy"))
    MAGMADNN_CHECK(s["strategy"].is_string(), IOError,
                   file << ": strategy: expected a string, got " << s["strategy"].dump());
}

// The data set a run trained on, as compared and as shown.
std::string dataset_of(const CompareRun& r) {
  const Json& data = r.config.contains("data") ? r.config["data"] : Json();
  const std::string name = text(data, "dataset");
  return name == "idx" ? "idx (" + text(data, "dir") + ")" : name;
}

// What the accuracy curve of a run shows: the best split it recorded per epoch.
enum class Source { test, validation, train };
const char* source_name(Source s) { return s == Source::test ? "test" : s == Source::validation ? "validation" : "train"; }
Source accuracy_source(const CompareRun& r) {
  if (!r.test_curve.empty()) return Source::test;
  for (const auto& e : r.history) {
    if (std::isfinite(e.val_accuracy)) return Source::validation;
  }
  return Source::train;
}

// Seconds of training at the end of each epoch, by epoch number.
std::map<unsigned, double> elapsed_by_epoch(const model::History& h) {
  std::map<unsigned, double> t;
  double sum = 0;
  for (const auto& e : h) t[e.epoch] = sum += e.seconds;
  return t;
}

struct Curves {
  std::vector<Series> loss, accuracy;
  std::string accuracy_title, accuracy_axis;
};

Curves curves_of(const std::vector<CompareRun>& runs) {
  Curves c;
  std::vector<Source> sources;
  for (const auto& r : runs) sources.push_back(accuracy_source(r));
  bool mixed = false;
  for (Source s : sources) mixed = mixed || s != sources.front();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const CompareRun& r = runs[i];
    const std::string color = kPalette[i % kColors];
    const bool dashed = i >= kColors;
    const std::string label = run_label(r);
    Series loss{label, color, dashed, {}, {}};
    Series acc{mixed ? label + " (" + source_name(sources[i]) + ")" : label, color, dashed, {}, {}};
    const auto elapsed = elapsed_by_epoch(r.history);
    for (const auto& e : r.history) {
      loss.x.push_back(elapsed.at(e.epoch));
      loss.y.push_back(e.train_loss);
      if (sources[i] == Source::test) continue;
      acc.x.push_back(elapsed.at(e.epoch));
      acc.y.push_back(sources[i] == Source::validation ? e.val_accuracy : e.train_accuracy);
    }
    for (const auto& t : r.test_curve) {
      const auto at = elapsed.find(t.epoch);
      if (at == elapsed.end()) continue;  // an epoch metrics.csv does not have: no time to put it at
      acc.x.push_back(at->second);
      acc.y.push_back(t.accuracy);
    }
    c.loss.push_back(std::move(loss));
    c.accuracy.push_back(std::move(acc));
  }
  if (mixed) {
    c.accuracy_title = "Accuracy against time";
    c.accuracy_axis = "accuracy (split in each label)";
  } else {
    const std::string s = source_name(sources.front());
    c.accuracy_title = std::string(1, static_cast<char>(std::toupper(s[0]))) + s.substr(1) + " accuracy against time";
    c.accuracy_axis = s + " accuracy";
  }
  return c;
}

std::string accuracy_note(const std::vector<CompareRun>& runs) {
  int test = 0, validation = 0, train = 0;
  for (const auto& r : runs) {
    const Source s = accuracy_source(r);
    (s == Source::test ? test : s == Source::validation ? validation : train) += 1;
  }
  std::string note;
  if (test > 0) {
    note += "Test accuracy per epoch comes from runs trained with \"test_every_epoch\": true (test_per_epoch.csv), "
            "recorded for this comparison only and never used to stop training or choose a model. ";
  }
  if (validation > 0) {
    note += "Validation accuracy is that of the training samples held out (data.val_split); the test split of "
            "such a run is scored once, after training (the table's test accuracy). ";
  }
  if (train > 0) note += "Runs without validation show their training accuracy. ";
  return note;
}

const char* const kStyle =
    "*{box-sizing:border-box}\n"
    "body{margin:0;font:14px/1.4 sans-serif;color:#222;background:#f3f4f6}\n"
    "main{max-width:1160px;margin:0 auto;padding:20px 24px 40px}\n"
    "h1{font-size:22px;margin:0 0 4px;overflow-wrap:anywhere}h2{font-size:18px;margin:28px 0 10px}\n"
    ".sub{color:#555;margin:0 0 16px;overflow-wrap:anywhere}.note{color:#555;font-size:12px}\n"
    ".grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:14px}\n"
    ".panel{background:#fff;border:1px solid #d8dbe0;border-radius:8px;padding:6px;min-width:0}\n"
    "svg.chart{display:block;width:100%;height:auto}\n"
    ".chart text{font-size:12px;fill:#222}.chart .title{font-size:14px;font-weight:bold}\n"
    ".chart .label{font-size:13px}.chart .grid{stroke:#e4e4e4}\n"
    ".scroll{overflow:auto;max-width:100%}\n"
    "table{border-collapse:collapse;background:#fff}\n"
    "td,th{border:1px solid #d0d0d0;padding:3px 8px;text-align:right}th{background:#eef0f3}\n"
    ".runs{width:100%;font-size:13px}.runs .run{text-align:left;overflow-wrap:anywhere}\n"
    ".swatch{display:inline-block;width:18px;height:4px;margin-right:6px;vertical-align:middle}\n"
    "@media print{body{background:#fff}.scroll{overflow:visible}.panel{break-inside:avoid}}\n";

std::string runs_table(const std::vector<CompareRun>& runs) {
  std::ostringstream o;
  o << "<div class=\"scroll panel\"><table class=\"runs\">\n<thead><tr><th class=\"run\">run</th><th>ranks</th><th>strategy</th>"
       "<th>global batch</th><th>epochs</th><th>final train loss</th><th>test loss</th><th>test accuracy</th>"
       "<th>training time</th><th>samples/s</th></tr></thead>\n<tbody>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const CompareRun& r = runs[i];
    const Json& s = r.summary;
    double batch = number(s, "batch_size");
    if (!std::isfinite(batch)) batch = number(r.config, "batch_size");
    double epochs = number(s, "epochs");
    if (!std::isfinite(epochs)) epochs = static_cast<double>(r.history.size());
    double train_s = number(s, "train_seconds");
    if (!std::isfinite(train_s) && !r.history.empty()) train_s = elapsed_by_epoch(r.history).rbegin()->second;
    const double final_loss = r.history.empty() ? number(s, "final_train_loss") : r.history.back().train_loss;
    const std::string strategy = strategy_of(r);
    o << "<tr data-run=\"" << html_escape(r.name) << "\"><td class=\"run\" title=\"" << html_escape(r.dir)
      << "\"><span class=\"swatch\" style=\"background:" << kPalette[i % kColors] << "\"></span>"
      << html_escape(r.name) << "</td><td>" << ranks_of(r) << "</td><td>"
      << html_escape(strategy.empty() ? "-" : strategy) << "</td><td>" << grouped(batch) << "</td><td>"
      << grouped(epochs) << "</td><td>" << fixed4(final_loss) << "</td><td>" << fixed4(number(s, "test_loss"))
      << "</td><td>" << percent(number(s, "test_accuracy")) << "</td><td>" << seconds(train_s) << "</td><td>"
      << grouped(number(s, "samples_per_second")) << "</td></tr>\n";
  }
  o << "</tbody></table></div>\n";
  return o.str();
}

}  // namespace

CompareRun read_compare_run(const std::string& dir) {
  MAGMADNN_CHECK(fs::is_directory(dir), IOError, dir << " is not a run folder: no such directory");
  std::string missing;
  for (const char* f : {"config.json", "metrics.csv", "summary.json"}) {
    if (!fs::exists(fs::path(dir) / f)) missing += (missing.empty() ? "" : ", ") + std::string(f);
  }
  MAGMADNN_CHECK(missing.empty(), IOError,
                 dir << " is not a run folder of magmadnn train: it has no " << missing << previous_run_hint(dir));
  const RunFolder rf(dir);
  CompareRun r;
  r.dir = dir;
  r.name = fs::path(dir).lexically_normal().filename().string();
  if (r.name.empty() || r.name == ".") r.name = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  r.config = rf.read_config();
  r.summary = rf.read_summary();
  check_summary_fields(r.summary, rf.file("summary.json"));
  r.history = rf.read_metrics();
  const std::string curve = rf.file("test_per_epoch.csv");
  if (fs::exists(curve)) r.test_curve = parse_test_curve_csv(read_text_file(curve), curve);
  return r;
}

void check_comparable(const std::vector<CompareRun>& runs) {
  MAGMADNN_CHECK(!runs.empty(), ValueError, "no run folder to compare");
  const std::string first = dataset_of(runs.front());
  for (const auto& r : runs) {
    MAGMADNN_CHECK(dataset_of(r) == first, ValueError,
                   "runs of different data sets cannot be compared: " << runs.front().dir << " trained on \"" << first
                                                                      << "\", " << r.dir << " on \"" << dataset_of(r)
                                                                      << "\"");
  }
}

long long ranks_of(const CompareRun& run) {
  const double n = number(run.summary, "ranks");
  return std::isfinite(n) && n >= 1 ? static_cast<long long>(n) : 1;
}

std::string strategy_of(const CompareRun& run) { return text(run.summary, "strategy"); }

std::string run_label(const CompareRun& run) {
  const long long n = ranks_of(run);
  std::string label = std::to_string(n) + (n == 1 ? " rank" : " ranks");
  if (!strategy_of(run).empty()) label += ", " + strategy_of(run);
  return label + ": " + run.name;
}

std::string render_compare(const std::vector<CompareRun>& runs) {
  const Curves c = curves_of(runs);
  std::ostringstream o;
  const std::string title = "magmadnn: " + std::to_string(runs.size()) + (runs.size() == 1 ? " run" : " runs") +
                            " compared";
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" << html_escape(title)
    << "</title>\n<style>\n"
    << kStyle << "</style>\n</head>\n<body>\n<main>\n<h1>" << html_escape(title) << "</h1>\n";
  if (!runs.empty()) o << "<p class=\"sub\">data set: " << html_escape(dataset_of(runs.front())) << "</p>\n";
  o << "<h2>Loss and accuracy against training time</h2>\n<div class=\"grid2\">\n<div class=\"panel\">"
    << svg_line_chart("Training loss against time", "training time (s)", "training loss", c.loss, XAxis::from_zero)
    << "</div>\n<div class=\"panel\">"
    << svg_line_chart(c.accuracy_title, "training time (s)", c.accuracy_axis, c.accuracy, XAxis::from_zero)
    << "</div>\n</div>\n<p class=\"note\">Training time is the running sum of each run's per-epoch training seconds "
       "(metrics.csv), one point per epoch; validation and test scoring are not counted. "
    << html_escape(accuracy_note(runs)) << "</p>\n<h2>Runs</h2>\n"
    << runs_table(runs) << "</main>\n</body>\n</html>\n";
  return o.str();
}

}  // namespace magmadnn::cli
