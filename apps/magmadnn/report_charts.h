/// @file report_charts.h
/// The charts of report.html, each an inline <svg> element of 540 x 330 user
/// units (a viewBox, so the page may scale it down to its column).
///
/// Guarantees: every chart has a title, axes with tick labels, a title per
/// axis, and a <title> tooltip per point or bar; a chart with nothing
/// finite to draw says "no data"; every text is HTML-escaped.
#pragma once

#include <string>
#include <vector>

namespace magmadnn::cli {

/// One line of a line chart.
struct Series {
  std::string label;
  std::string color;
  bool dashed = false;
  std::vector<double> x, y;  ///< same length; non-finite points are skipped
};

/// How a line chart ticks its x axis.
enum class XAxis {
  epochs,   ///< integer ticks over the data's range (x is the epoch)
  from_zero ///< "nice" ticks from 0 to past the largest x (x is e.g. seconds)
};

/// Lines with a dot per point and a legend naming each drawn series, on a
/// white box in the right-hand corner (top or bottom) the points crowd
/// least, as wide as its longest label.
std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<Series>& series, XAxis x_axis = XAxis::epochs);

/// One bar per x (the epoch) from 0 to y; non-finite or negative y are skipped.
std::string svg_bar_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                          const std::string& color, const std::vector<double>& x, const std::vector<double>& y);

}  // namespace magmadnn::cli
