/// @file tune_charts.h
/// The charts of the tune report page (tune_report.h) that the training
/// report has no use for, drawn in the shared frame (chart_frame.h) as
/// inline <svg class="chart"> elements:
///  - every trial's curve on one chart, the best one on top and highlighted;
///  - a histogram over given bin edges, the count written above each bar;
///  - a heat map of a grid of cells, each with its value written in it.
///
/// Guarantees: every text is HTML-escaped; a chart with nothing finite to
/// draw says "no data"; every curve, bar and cell has a <title> tooltip.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace magmadnn::cli {

/// One trial's curve in svg_trial_curves.
struct TrialCurve {
  std::int64_t trial = 0;
  enum Kind { ok, pruned, failed, best } kind = ok;
  std::string tooltip;
  std::vector<double> x, y;  ///< same length; non-finite points are skipped
};

/// All curves over epochs, drawn thin (pruned dashed, failed red) with the
/// best thick on top, and a legend of the kinds present with their counts.
/// Values far above the bulk (over twice the 90th percentile of all points,
/// a diverged trial) are drawn at the top edge so the others stay readable;
/// the chart then says so. Each curve is a <g class="trial-curve"
/// data-trial="N">, so the page can highlight it.
std::string svg_trial_curves(const std::string& title, const std::string& y_label,
                             const std::vector<TrialCurve>& curves);

/// Equal-width bins over the finite values: k = ceil(log2 n) + 1 of them
/// (Sturges; at most 20) from the least value to the greatest, bin i holding
/// lo + i w <= v < lo + (i+1) w and the last one its upper edge too. All
/// values equal: one bin around them. No finite value: no bin.
struct Histogram {
  std::vector<double> edges;          ///< counts.size() + 1 of them
  std::vector<std::int64_t> counts;
};
Histogram histogram_of(const std::vector<double>& values);

/// Bars from edges[i] to edges[i+1] of height counts[i] (edges.size() ==
/// counts.size() + 1, increasing), each bar <rect class="bin" data-count="N">.
std::string svg_histogram(const std::string& title, const std::string& x_label, const std::vector<double>& edges,
                          const std::vector<std::int64_t>& counts);

/// A heat map cell.
struct HeatCell {
  enum State { empty, ok, pruned, failed } state = empty;
  double value = std::numeric_limits<double>::quiet_NaN();  ///< ok and pruned cells; NaN: none
  bool best = false;   ///< holds the best trial: outlined and starred
  int trials = 0;      ///< how many trials fell in the cell
  std::string tooltip;
};

/// Rows top to bottom, columns left to right; cells[r][c]. Ok cells are
/// coloured on one scale from the worst to the best ok value (`minimize`
/// says which end is best), with a legend of the scale; pruned cells are
/// grey, failed ones pink with a cross, empty ones blank with a dash. Each
/// cell is a <g class="cell STATE[ best]" data-row="r" data-col="c"> whose
/// <text class="v"> is the value ("%.4g") or the state's word.
std::string svg_heat_map(const std::string& title, const std::string& x_label, const std::string& y_label,
                         const std::vector<std::string>& row_labels, const std::vector<std::string>& col_labels,
                         const std::vector<std::vector<HeatCell>>& cells, bool minimize);

}  // namespace magmadnn::cli
