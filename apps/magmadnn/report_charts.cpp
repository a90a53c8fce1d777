#include "report_charts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <sstream>

#include "chart_frame.h"
#include "html.h"
#include "page_format.h"

namespace magmadnn::cli {

using namespace chart;
using page::fmt;

std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<Series>& series, XAxis x_axis) {
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
  for (const auto& s : series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      xlo = std::min(xlo, s.x[i]);
      xhi = std::max(xhi, s.x[i]);
      ylo = std::min(ylo, s.y[i]);
      yhi = std::max(yhi, s.y[i]);
    }
  }
  std::ostringstream o;
  open_chart(o, title);
  if (!std::isfinite(xlo)) return close_without_data(o);
  double x_first = 0, x_step = 1;
  if (x_axis == XAxis::from_zero) {
    const Axis xa = value_axis(std::min(0.0, xlo), xhi);
    xlo = xa.lo;
    xhi = xa.hi;
    x_first = xa.lo;
    x_step = xa.step;
  } else {
    if (xlo == xhi) {
      xlo -= 1;
      xhi += 1;
    }
    x_first = std::ceil(xlo);
    x_step = epoch_step(xhi - xlo);
  }
  const Axis ya = value_axis(ylo, yhi);
  auto sx = [&](double x) { return L + (x - xlo) / (xhi - xlo) * PW; };
  auto sy = [&](double y) { return T + PH - (y - ya.lo) / (ya.hi - ya.lo) * PH; };
  draw_axes(o, ya, sy, x_first, xhi, x_step, sx, x_label, y_label);

  // The legend goes in the right-hand corner (top or bottom) that the lines
  // cross least: falling losses leave the top free, rising accuracies the bottom.
  int drawn = 0, top_hits = 0, bottom_hits = 0;
  std::size_t longest = 0;
  for (const auto& s : series) {
    bool any = false;
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      any = true;
      if (sx(s.x[i]) < L + PW * 0.55) continue;
      if (sy(s.y[i]) < T + PH * 0.4) ++top_hits;
      if (sy(s.y[i]) > T + PH * 0.6) ++bottom_hits;
    }
    drawn += any;
    if (any) longest = std::max(longest, s.label.size());
  }
  const double legend_top = top_hits <= bottom_hits ? T + 14 : T + PH - 10 - 18 * (drawn - 1);
  // About 6.5 units per character of the 12-unit font, never wider than the plot.
  const double legend_width = std::min(PW - 8, std::max(160.0, 34 + 6.5 * static_cast<double>(longest)));
  const double lx = L + PW - legend_width;
  std::ostringstream legend;
  if (drawn > 0) {
    legend << "<rect class=\"legend-box\" x=\"" << px(lx - 6) << "\" y=\"" << px(legend_top - 13) << "\" width=\""
           << px(legend_width + 2) << "\" height=\"" << 18 * drawn + 1
           << "\" fill=\"#fff\" fill-opacity=\"0.85\"/>\n";
  }
  int legend_row = 0;
  for (const auto& s : series) {
    std::ostringstream pts, dots;
    int n = 0;
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      pts << (n++ ? " " : "") << px(sx(s.x[i])) << ',' << px(sy(s.y[i]));
      dots << "<circle cx=\"" << px(sx(s.x[i])) << "\" cy=\"" << px(sy(s.y[i])) << "\" r=\"3.5\" fill=\"" << s.color
           << "\"><title>" << html_escape(s.label) << ", " << html_escape(x_label) << ' ' << fmt(s.x[i]) << ": "
           << fmt(s.y[i], 5) << "</title></circle>\n";
    }
    if (n == 0) continue;
    o << "<g class=\"series\" data-series=\"" << html_escape(s.label) << "\">\n<polyline fill=\"none\" stroke=\""
      << s.color << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << " points=\""
      << pts.str() << "\"/>\n"
      << dots.str() << "</g>\n";
    const double ly = legend_top + 18 * legend_row++;
    legend << "<g class=\"legend\"><line x1=\"" << px(lx) << "\" x2=\"" << px(lx + 24) << "\" y1=\"" << ly - 4
           << "\" y2=\"" << ly - 4 << "\" stroke=\"" << s.color << "\" stroke-width=\"2\""
           << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << "/><text x=\"" << px(lx + 30) << "\" y=\"" << ly
           << "\">" << html_escape(s.label) << "</text></g>\n";
  }
  o << legend.str() << "</svg>\n";
  return o.str();
}

std::string svg_bar_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                          const std::string& color, const std::vector<double>& x, const std::vector<double>& y) {
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, yhi = 0;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i]) || y[i] < 0) continue;
    xlo = std::min(xlo, x[i]);
    xhi = std::max(xhi, x[i]);
    yhi = std::max(yhi, y[i]);
  }
  std::ostringstream o;
  open_chart(o, title);
  if (!std::isfinite(xlo)) return close_without_data(o);
  // Bars stand on zero, and the slots are one x unit wide with half a slot
  // of room at either end so the outer bars are not cut.
  const Axis ya = value_axis(0.0, yhi > 0 ? yhi : 1.0);
  const double slot = PW / (xhi - xlo + 1);
  auto sx = [&](double v) { return L + (v - xlo + 0.5) * slot; };
  auto sy = [&](double v) { return T + PH - (v - ya.lo) / (ya.hi - ya.lo) * PH; };
  draw_axes(o, ya, sy, xlo, xhi, epoch_step(xhi - xlo), sx, x_label, y_label);
  const double bar = std::max(1.0, slot * 0.7);
  o << "<g class=\"bars\" fill=\"" << color << "\">\n";
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i]) || y[i] < 0) continue;
    o << "<rect x=\"" << px(sx(x[i]) - bar / 2) << "\" y=\"" << px(sy(y[i])) << "\" width=\"" << px(bar)
      << "\" height=\"" << px(sy(0) - sy(y[i])) << "\"><title>" << html_escape(x_label) << ' ' << fmt(x[i]) << ": "
      << fmt(y[i], 4) << ' ' << html_escape(y_label) << "</title></rect>\n";
  }
  o << "</g>\n</svg>\n";
  return o.str();
}

}  // namespace magmadnn::cli
