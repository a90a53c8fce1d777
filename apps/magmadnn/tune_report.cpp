#include "tune_report.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "html.h"
#include "magmadnn/io/atomic_file.h"
#include "page_format.h"
#include "report_charts.h"
#include "tune_charts.h"
#include "tune_heat_map.h"
#include "tune_page_assets.h"
#include "tune_results.h"

namespace magmadnn::cli {
namespace {

using page::count_of;
using page::fmt;
using page::grouped;
using page::percent;
using page::seconds;

std::string dot_join(const std::vector<std::string>& parts) {
  std::string line;
  for (const auto& p : parts) line += (line.empty() ? "" : " \xc2\xb7 ") + p;  // U+00B7 middle dot
  return line;
}

// The last component of a dimension's path: the table's header, shorter.
std::string short_name(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

std::string subtitle(const TuneResults& r) {
  std::vector<std::string> parts;
  if (!r.searcher.empty()) parts.push_back("searcher " + r.searcher);
  if (r.seed) parts.push_back("seed " + std::to_string(*r.seed));
  parts.push_back("objective " + r.objective.value("kind", std::string()) +
                  (r.minimize() ? " (smaller is better)" : " (larger is better)"));
  parts.push_back(count_of(static_cast<std::int64_t>(r.dimensions.size()), "dimension", "dimensions"));
  return "<p class=\"sub\">" + html_escape(dot_join(parts)) + "</p>\n";
}

std::string card(const std::string& label, const std::string& value, const std::string& note, bool accent = false) {
  return "<div class=\"card" + std::string(accent ? " accent" : "") + "\"><div class=\"label\">" +
         html_escape(label) + "</div><div class=\"value\">" + html_escape(value) + "</div><div class=\"note\">" +
         html_escape(note) + "</div></div>\n";
}

std::string headline(const TuneResults& r) {
  int ok = 0, failed = 0, pruned = 0;
  double total = 0;
  std::set<double> workers;
  for (const auto& t : r.trials) {
    ok += t.status == TrialStatus::ok;
    failed += t.status == TrialStatus::failed;
    pruned += t.status == TrialStatus::pruned;
    if (std::isfinite(t.seconds)) total += t.seconds;
    if (std::isfinite(t.worker)) workers.insert(t.worker);
  }
  std::ostringstream o;
  o << "<section class=\"cards\" aria-label=\"headline\">\n";
  const TuneTrial* b = r.best_trial();
  o << card("Best objective", b ? fmt(b->objective, 6) : "-", b ? "trial " + std::to_string(b->index) : "no best trial",
            true);
  if (b && std::isfinite(b->final_accuracy)) {
    o << card("Best trial's accuracy", percent(b->final_accuracy),
              std::isfinite(b->test_accuracy) ? "test " + percent(b->test_accuracy) : "training, last epoch");
  }
  o << card("Trials", grouped(static_cast<double>(r.trials.size())),
            std::to_string(ok) + " ok, " + std::to_string(pruned) + " pruned, " + std::to_string(failed) + " failed");
  o << card("Trial time", seconds(total),
            r.trials.empty() ? "" : "mean " + seconds(total / static_cast<double>(r.trials.size())) + " per trial");
  if (!workers.empty()) o << card("Workers", grouped(static_cast<double>(workers.size())), "that ran a trial");
  o << "</section>\n";
  return o.str();
}

std::string params_table(const TuneTrial& t) {
  std::ostringstream o;
  o << "<table class=\"kv\">\n";
  for (const auto& [path, value] : t.params.items()) {
    o << "<tr><th>" << html_escape(path) << "</th><td>" << html_escape(param_text(value)) << "</td></tr>\n";
  }
  o << "<tr><th>objective</th><td>" << fmt(t.objective, 6) << "</td></tr>\n<tr><th>final loss</th><td>"
    << fmt(t.final_loss) << "</td></tr>\n<tr><th>final accuracy</th><td>" << percent(t.final_accuracy)
    << "</td></tr>\n<tr><th>test accuracy</th><td>" << percent(t.test_accuracy) << "</td></tr>\n<tr><th>seconds</th><td>"
    << seconds(t.seconds) << "</td></tr>\n</table>\n";
  return o.str();
}

std::string best_section(const TuneResults& r) {
  std::ostringstream o;
  o << "<h2>Best trial</h2>\n";
  const TuneTrial* b = r.best_trial();
  if (!b) {
    o << "<p>No best trial: " << (r.trials.empty() ? "no trial has run." : "none met the objective.") << "</p>\n";
    return o.str();
  }
  std::vector<double> epoch, loss, acc, time;
  for (const auto& p : b->curve) {
    epoch.push_back(p.epoch);
    loss.push_back(p.loss);
    acc.push_back(p.accuracy);
    time.push_back(p.seconds);
  }
  const std::string name = "trial " + std::to_string(b->index);
  const char* const loss_colour = "#1f77b4";
  const char* const acc_colour = "#e6550d";
  o << "<div class=\"best-box\">\n<div class=\"panel params\"><h3>Trial " << b->index << " \xe2\x98\x85</h3>\n"
    << params_table(*b) << "</div>\n<div class=\"grid2 best-curves\">\n<div class=\"panel\">"
    << svg_line_chart("Best trial: loss per epoch", "epoch", "loss", {{name + " loss", loss_colour, false, epoch, loss}})
    << "</div>\n<div class=\"panel\">"
    << svg_line_chart("Best trial: accuracy per epoch", "epoch", "accuracy",
                      {{name + " accuracy", acc_colour, false, epoch, acc}})
    << "</div>\n<div class=\"panel\">"
    << svg_line_chart("Best trial: loss against time", "training time (s)", "loss",
                      {{name + " loss", loss_colour, false, time, loss}}, XAxis::from_zero)
    << "</div>\n<div class=\"panel\">"
    << svg_line_chart("Best trial: accuracy against time", "training time (s)", "accuracy",
                      {{name + " accuracy", acc_colour, false, time, acc}}, XAxis::from_zero)
    << "</div>\n</div>\n</div>\n";
  return o.str();
}

std::string heat_map_section(const TuneResults& r) {
  std::ostringstream o;
  o << "<h2>Heat map</h2>\n";
  const HeatMapGrid g = heat_map_grid(r);
  if (g.col_path.empty()) {
    o << "<p>The search has no dimension to map.</p>\n";
    return o.str();
  }
  if (r.trials.empty()) {
    o << "<p>No trial has run: nothing to map.</p>\n";
    return o.str();
  }
  const std::string title = g.row_path.empty() ? "Objective by " + g.col_path
                                               : "Objective by " + g.row_path + " and " + g.col_path;
  o << "<div class=\"panel scroll heat-box\">"
    << svg_heat_map(title, g.col_path, g.row_path, g.row_labels, g.col_labels, g.cells, r.minimize()) << "</div>\n"
    << "<p class=\"note\">Each cell shows the best objective of its completed trials (&times;N: N trials fell "
       "there); grey hatched cells hold only pruned trials, pink ones only failed trials, &mdash; marks a point no "
       "trial reached. &#9733; marks the best trial.";
  if (g.unplaced > 0) {
    o << ' ' << count_of(g.unplaced, "trial has", "trials have") << " no value for one of the two dimensions and "
      << (g.unplaced == 1 ? "is" : "are") << " not shown.";
  }
  o << "</p>\n";
  return o.str();
}

std::string trial_tooltip(const TuneTrial& t) {
  std::vector<std::string> parts{"trial " + std::to_string(t.index) + " " + status_name(t.status)};
  if (std::isfinite(t.objective)) parts.push_back("objective " + fmt(t.objective, 6));
  for (const auto& [path, value] : t.params.items()) parts.push_back(short_name(path) + " " + param_text(value));
  return dot_join(parts);
}

std::string curves_section(const TuneResults& r) {
  std::vector<TrialCurve> curves;
  std::vector<double> objectives;
  for (const auto& t : r.trials) {
    TrialCurve c;
    c.trial = t.index;
    c.kind = r.best && t.index == *r.best    ? TrialCurve::best
             : t.status == TrialStatus::ok   ? TrialCurve::ok
             : t.status == TrialStatus::pruned ? TrialCurve::pruned
                                               : TrialCurve::failed;
    c.tooltip = trial_tooltip(t);
    for (const auto& p : t.curve) {
      c.x.push_back(p.epoch);
      c.y.push_back(p.loss);
    }
    curves.push_back(std::move(c));
    if (t.status == TrialStatus::ok) objectives.push_back(t.objective);
  }
  const Histogram h = histogram_of(objectives);
  std::ostringstream o;
  o << "<h2>Every trial</h2>\n<div class=\"grid2\">\n<div class=\"panel curves\">"
    << svg_trial_curves("Loss per epoch, every trial", "loss", curves) << "</div>\n<div class=\"panel\">"
    << svg_histogram("Objective of the completed trials", "objective (" + r.objective.value("kind", std::string()) + ")",
                     h.edges, h.counts)
    << "</div>\n</div>\n<p class=\"note\">Hover over a row of the table below to pick out its curve. The histogram "
       "counts completed trials with an objective, in ceil(log2 n) + 1 bins of equal width.</p>\n";
  return o.str();
}

// A cell with the value it sorts by: numbers as written with full precision,
// empty when absent, so that the script sorts them last.
std::string num_cell(double v, const std::string& shown) {
  return "<td data-v=\"" + (std::isfinite(v) ? page::printf1("%.17g", v) : std::string()) + "\">" + shown + "</td>";
}

std::string trial_table(const TuneResults& r) {
  std::vector<bool> numeric;
  for (const auto& d : r.dimensions) {
    bool all = true;
    for (const auto& t : r.trials) {
      if (t.params.contains(d.path)) all = all && t.params[d.path].is_number();
    }
    numeric.push_back(all);
  }
  std::ostringstream o;
  o << "<h2>Trials</h2>\n<p class=\"note\">Click a column's header to sort by it; click again for the other "
       "way.</p>\n<div class=\"panel scroll table-box\"><table id=\"trials\" class=\"trials\">\n<thead><tr>"
       "<th data-type=\"num\" aria-sort=\"ascending\">trial</th><th data-type=\"text\">status</th>";
  for (const auto& d : r.dimensions) {
    o << "<th data-type=\"" << (numeric[&d - r.dimensions.data()] ? "num" : "text") << "\" title=\""
      << html_escape(d.path) << "\">" << html_escape(short_name(d.path)) << "</th>";
  }
  o << "<th data-type=\"num\">objective</th><th data-type=\"num\">final loss</th><th data-type=\"num\">final "
       "accuracy</th><th data-type=\"num\">test accuracy</th><th data-type=\"num\">epochs</th><th "
       "data-type=\"num\">seconds</th><th data-type=\"num\">attempts</th><th data-type=\"num\">worker</th><th "
       "data-type=\"text\">error</th></tr></thead>\n<tbody>\n";
  // In index order, whatever order the engine wrote them in (e.g. as they finished).
  std::vector<const TuneTrial*> rows;
  for (const auto& t : r.trials) rows.push_back(&t);
  std::sort(rows.begin(), rows.end(), [](const TuneTrial* a, const TuneTrial* b) { return a->index < b->index; });
  for (const TuneTrial* row : rows) {
    const TuneTrial& t = *row;
    const bool best = r.best && t.index == *r.best;
    o << "<tr class=\"" << status_name(t.status) << (best ? " best" : "") << "\" id=\"trial-" << t.index
      << "\" data-trial=\"" << t.index << "\">"
      << num_cell(static_cast<double>(t.index), std::to_string(t.index) + (best ? " \xe2\x98\x85" : ""))
      << "<td data-v=\"" << status_name(t.status) << "\">" << status_name(t.status) << "</td>";
    for (std::size_t i = 0; i < r.dimensions.size(); ++i) {
      const std::string& path = r.dimensions[i].path;
      if (!t.params.contains(path)) {
        o << "<td data-v=\"\">-</td>";
      } else if (numeric[i]) {
        o << num_cell(t.params[path].get<double>(), html_escape(param_text(t.params[path])));
      } else {
        const std::string v = html_escape(param_text(t.params[path]));
        o << "<td data-v=\"" << v << "\">" << v << "</td>";
      }
    }
    const double epochs = t.curve.empty() ? kNaN : static_cast<double>(t.curve.size());
    o << num_cell(t.objective, fmt(t.objective, 6)) << num_cell(t.final_loss, fmt(t.final_loss))
      << num_cell(t.final_accuracy, percent(t.final_accuracy)) << num_cell(t.test_accuracy, percent(t.test_accuracy))
      << num_cell(epochs, fmt(epochs)) << num_cell(t.seconds, seconds(t.seconds))
      << num_cell(t.attempts, fmt(t.attempts)) << num_cell(t.worker, fmt(t.worker)) << "<td class=\"error\" data-v=\""
      << html_escape(t.error) << "\">" << html_escape(t.error) << "</td></tr>\n";
  }
  o << "</tbody></table></div>\n";
  return o.str();
}

std::string space_section(const TuneResults& r) {
  std::ostringstream o;
  o << "<h2>Search space</h2>\n<table class=\"kv space\">\n<tr><th>objective</th><td><code>"
    << html_escape(r.objective.dump()) << "</code></td></tr>\n";
  for (const auto& d : r.dimensions) {
    Json rest = d.spec;
    rest.erase("path");
    o << "<tr><th>" << html_escape(d.path) << "</th><td><code>" << html_escape(rest.dump()) << "</code></td></tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

std::string page_name(const std::filesystem::path& out_dir) {
  const std::filesystem::path p = out_dir.lexically_normal();
  std::string name = p.filename().string();
  if (name.empty() || name == ".") name = std::filesystem::absolute(p).lexically_normal().parent_path().filename().string();
  return name;
}

std::string render_tune_report(const TuneResults& r, const std::string& name) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>magmadnn tune: "
    << html_escape(name) << "</title>\n<style>\n"
    << kTunePageStyle << "</style>\n</head>\n<body>\n<main>\n<h1>magmadnn tune: " << html_escape(name) << "</h1>\n"
    << subtitle(r) << headline(r) << best_section(r) << heat_map_section(r) << curves_section(r) << trial_table(r)
    << space_section(r) << "</main>\n<script>\n"
    << kTunePageScript << "</script>\n</body>\n</html>\n";
  return o.str();
}

}  // namespace

void write_tune_report(const std::filesystem::path& out_dir) {
  const TuneResults r = read_tune_results(out_dir / "results.json");
  io::write_file_atomic((out_dir / "report.html").string(), render_tune_report(r, page_name(out_dir)));
}

}  // namespace magmadnn::cli
