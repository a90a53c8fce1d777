/// @file tune_report.h
/// report.html of a hyperparameter search (`magmadnn tune --out DIR`): one
/// self-contained page (inline CSS, SVG and a small script; no external
/// resource, so it opens offline and from a file URL) built from
/// DIR/results.json (tune_results.h) that shows:
///  - a headline: the best objective and its trial, the trials by status,
///    their summed time and the workers that ran them;
///  - the best trial: its parameters, final values, and its loss and
///    accuracy against epoch and against training time (each curve
///    point's cumulative seconds);
///  - the heat map of batch size x learning rate (tune_heat_map.h for the
///    dimensions chosen and what a cell shows), best cell starred;
///  - every trial's loss curve on one chart, the best highlighted, pruned
///    dashed, failed red; hovering a trial's table row highlights its curve;
///  - the histogram of the completed trials' objectives (tune_charts.h,
///    histogram_of, for the bins);
///  - the trial table, one row per trial, sorted by index and re-sorted by
///    any column when its header is clicked (again: the other way); empty
///    values sort last either way. Failed rows are red with their error,
///    pruned rows grey, the best row starred;
///  - the search space and the objective as results.json gives them.
///
/// Which way is better: the objective's "direction" ("minimize" or
/// "maximize") when results.json gives it; else the way that makes the
/// engine's "best" trial the extreme of the completed ones; else smaller is
/// better unless the objective's kind names an accuracy.
///
/// Requires: DIR/results.json as tune_results.h describes; otherwise IOError
/// naming the file and the JSON path of the first bad field, and no page is
/// written. Guarantees: report.html is replaced atomically (a reader sees
/// the old page or the new one); every string from results.json is
/// HTML-escaped; nothing on the page is wider than a 1200 px window.
#pragma once

#include <filesystem>

namespace magmadnn::cli {

/// Reads out_dir/results.json and writes out_dir/report.html.
void write_tune_report(const std::filesystem::path& out_dir);

}  // namespace magmadnn::cli
