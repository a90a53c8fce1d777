/// @file chart_frame.h
/// The frame the pages' SVG charts share (report_charts.h, tune_charts.h):
/// a 540 x 330 user-unit <svg class="chart"> with its title, a white plot
/// area inside fixed margins, "nice" value axes, and the grid, ticks and
/// axis titles drawn around the plot area. One frame, so that every chart on
/// every page has the same size, fonts and axes.
///
/// Guarantees: every text written is HTML-escaped; coordinates are written
/// with one decimal.
#pragma once

#include <functional>
#include <sstream>
#include <string>

namespace magmadnn::cli::chart {

constexpr double W = 540, H = 330, L = 64, R = 16, T = 34, B = 52;  // frame and margins
constexpr double PW = W - L - R, PH = H - T - B;                     // plot area

/// A coordinate as written into the SVG ("%.1f").
std::string px(double v);

/// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `n` ticks.
double nice_step(double range, int n);

/// A value axis: from lo to hi by step, both ends multiples of step.
struct Axis {
  double lo, hi, step;
};
/// The nice axis covering [lo, hi]; a single value still gets a visible range.
Axis value_axis(double lo, double hi);
/// Epochs are integers: one tick per epoch up to 10, then a nice integer step.
double epoch_step(double range);

/// Opens the <svg> (aria-label `title`) with its title and the empty plot area.
void open_chart(std::ostringstream& o, const std::string& title);
/// Writes "no data" in the plot area, closes the <svg> and returns it all.
std::string close_without_data(std::ostringstream& o);
/// Grid lines with their values, the x ticks from x_first to x_last by
/// x_step, and both axis titles; sx and sy map values to SVG coordinates.
void draw_axes(std::ostringstream& o, const Axis& ya, const std::function<double(double)>& sy, double x_first,
               double x_last, double x_step, const std::function<double(double)>& sx, const std::string& x_label,
               const std::string& y_label);

}  // namespace magmadnn::cli::chart
