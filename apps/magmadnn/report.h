/// @file report.h
/// report.html of a run folder: a single self-contained page (inline CSS and
/// SVG, no script, no external resource, so it opens offline and from a file
/// URL) with the loss and accuracy curves per epoch, training and validation,
/// the run's summary, the per-epoch table and the config.
///
/// Requires nothing of the history: an empty history gives a page that says
/// so; NaN values (no validation) are left out of the curves and shown as "-".
/// Guarantees: the page contains two <svg> charts, each with axes, tick
/// labels, an axis title per axis and a legend naming its series; every
/// string taken from the run (name, config, paths) is HTML-escaped.
#pragma once

#include <string>

#include "config.h"
#include "magmadnn/model/params.h"

namespace magmadnn::cli {

struct ReportInput {
  std::string title;          ///< e.g. the config's name
  model::History history;     ///< one record per epoch, in order
  Json summary;               ///< summary.json's content (flat object)
  Json config;                ///< the resolved config
};

/// The HTML text of the report.
std::string render_report(const ReportInput& in);

/// One line chart as an inline <svg> element. Exposed for tests.
struct Series {
  std::string label;
  std::string color;
  bool dashed = false;
  std::vector<double> x, y;  ///< same length; non-finite points are skipped
};
std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<Series>& series);

/// `s` with &, <, >, " and ' replaced by entities.
std::string html_escape(const std::string& s);

}  // namespace magmadnn::cli
