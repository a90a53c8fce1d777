#include "chart_frame.h"

#include <cmath>
#include <cstdio>

#include "html.h"
#include "page_format.h"

namespace magmadnn::cli::chart {

using page::fmt;

std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

double nice_step(double range, int n) {
  const double raw = range / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

Axis value_axis(double lo, double hi) {
  if (!(lo < hi)) {  // a flat or single-valued series still needs a visible range
    const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double step = nice_step(hi - lo, 5);
  return {std::floor(lo / step) * step, std::ceil(hi / step) * step, step};
}

double epoch_step(double range) { return range <= 10 ? 1.0 : std::ceil(nice_step(range, 8)); }

void open_chart(std::ostringstream& o, const std::string& title) {
  o << "<svg class=\"chart\" role=\"img\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << ' '
    << H << "\" aria-label=\"" << html_escape(title) << "\">\n";
  o << "<text x=\"" << W / 2 << "\" y=\"20\" text-anchor=\"middle\" class=\"title\">" << html_escape(title)
    << "</text>\n";
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << PW << "\" height=\"" << PH
    << "\" fill=\"#fff\" stroke=\"#444\"/>\n";
}

std::string close_without_data(std::ostringstream& o) {
  o << "<text x=\"" << W / 2 << "\" y=\"" << T + PH / 2 << "\" text-anchor=\"middle\">no data</text>\n</svg>\n";
  return o.str();
}

void draw_axes(std::ostringstream& o, const Axis& ya, const std::function<double(double)>& sy, double x_first,
               double x_last, double x_step, const std::function<double(double)>& sx, const std::string& x_label,
               const std::string& y_label) {
  o << "<g class=\"axis\">\n";
  for (double y = ya.lo; y <= ya.hi + ya.step * 1e-6; y += ya.step) {
    o << "<line x1=\"" << L << "\" x2=\"" << L + PW << "\" y1=\"" << px(sy(y)) << "\" y2=\"" << px(sy(y))
      << "\" class=\"grid\"/><text x=\"" << L - 6 << "\" y=\"" << px(sy(y) + 4) << "\" text-anchor=\"end\">"
      << fmt(std::abs(y) < ya.step * 1e-9 ? 0.0 : y) << "</text>\n";
  }
  for (double x = x_first; x <= x_last + 1e-9; x += x_step) {
    o << "<line x1=\"" << px(sx(x)) << "\" x2=\"" << px(sx(x)) << "\" y1=\"" << T + PH << "\" y2=\"" << T + PH + 5
      << "\" stroke=\"#444\"/><text x=\"" << px(sx(x)) << "\" y=\"" << T + PH + 18 << "\" text-anchor=\"middle\">"
      << fmt(x) << "</text>\n";
  }
  o << "<text x=\"" << L + PW / 2 << "\" y=\"" << H - 10 << "\" text-anchor=\"middle\" class=\"label\">"
    << html_escape(x_label) << "</text>\n";
  o << "<text transform=\"translate(16," << T + PH / 2 << ") rotate(-90)\" text-anchor=\"middle\" class=\"label\">"
    << html_escape(y_label) << "</text>\n</g>\n";
}

}  // namespace magmadnn::cli::chart
