#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace magmadnn::cli {
namespace {

std::string fmt(double v, int digits = 4) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `n` ticks.
double nice_step(double range, int n) {
  const double raw = range / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

struct Axis {
  double lo, hi, step;
};

Axis value_axis(double lo, double hi) {
  if (!(lo < hi)) {  // a flat or single-valued series still needs a visible range
    const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double step = nice_step(hi - lo, 5);
  return {std::floor(lo / step) * step, std::ceil(hi / step) * step, step};
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<Series>& series) {
  constexpr double W = 540, H = 330, L = 64, R = 16, T = 34, B = 52;
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
  o << "<svg class=\"chart\" role=\"img\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << ' '
    << H << "\" aria-label=\"" << html_escape(title) << "\">\n";
  o << "<text x=\"" << W / 2 << "\" y=\"20\" text-anchor=\"middle\" class=\"title\">" << html_escape(title)
    << "</text>\n";
  const double pw = W - L - R, ph = H - T - B;
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"#fff\" stroke=\"#444\"/>\n";
  if (!std::isfinite(xlo)) {
    o << "<text x=\"" << W / 2 << "\" y=\"" << T + ph / 2 << "\" text-anchor=\"middle\">no data</text>\n</svg>\n";
    return o.str();
  }
  // Epochs are integers: one tick per epoch up to 10, then a nice step.
  if (xlo == xhi) {
    xlo -= 1;
    xhi += 1;
  }
  const double xstep = (xhi - xlo) <= 10 ? 1.0 : std::ceil(nice_step(xhi - xlo, 8));
  const Axis ya = value_axis(ylo, yhi);
  auto sx = [&](double x) { return L + (x - xlo) / (xhi - xlo) * pw; };
  auto sy = [&](double y) { return T + ph - (y - ya.lo) / (ya.hi - ya.lo) * ph; };

  o << "<g class=\"axis\">\n";
  for (double y = ya.lo; y <= ya.hi + ya.step * 1e-6; y += ya.step) {
    o << "<line x1=\"" << L << "\" x2=\"" << L + pw << "\" y1=\"" << px(sy(y)) << "\" y2=\"" << px(sy(y))
      << "\" class=\"grid\"/><text x=\"" << L - 6 << "\" y=\"" << px(sy(y) + 4) << "\" text-anchor=\"end\">"
      << fmt(std::abs(y) < ya.step * 1e-9 ? 0.0 : y) << "</text>\n";
  }
  for (double x = std::ceil(xlo); x <= xhi + 1e-9; x += xstep) {
    o << "<line x1=\"" << px(sx(x)) << "\" x2=\"" << px(sx(x)) << "\" y1=\"" << T + ph << "\" y2=\"" << T + ph + 5
      << "\" stroke=\"#444\"/><text x=\"" << px(sx(x)) << "\" y=\"" << T + ph + 18 << "\" text-anchor=\"middle\">"
      << fmt(x) << "</text>\n";
  }
  o << "<text x=\"" << L + pw / 2 << "\" y=\"" << H - 10 << "\" text-anchor=\"middle\" class=\"label\">"
    << html_escape(x_label) << "</text>\n";
  o << "<text transform=\"translate(16," << T + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\" class=\"label\">"
    << html_escape(y_label) << "</text>\n</g>\n";

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
    const double ly = T + 14 + 18 * legend_row++;
    o << "<g class=\"legend\"><line x1=\"" << L + pw - 160 << "\" x2=\"" << L + pw - 136 << "\" y1=\"" << ly - 4
      << "\" y2=\"" << ly - 4 << "\" stroke=\"" << s.color << "\" stroke-width=\"2\""
      << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << "/><text x=\"" << L + pw - 130 << "\" y=\"" << ly << "\">"
      << html_escape(s.label) << "</text></g>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string render_report(const ReportInput& in) {
  std::vector<double> ep, tl, vl, ta, va;
  for (const auto& r : in.history) {
    ep.push_back(r.epoch);
    tl.push_back(r.train_loss);
    vl.push_back(r.val_loss);
    ta.push_back(r.train_accuracy);
    va.push_back(r.val_accuracy);
  }
  const std::string train_color = "#1f77b4", val_color = "#e6550d";
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>magmadnn run: "
    << html_escape(in.title) << "</title>\n<style>\n"
    << "body{font-family:sans-serif;margin:24px;color:#222;background:#fafafa}\n"
    << "h1{font-size:22px}h2{font-size:17px;margin-top:28px}\n"
    << ".charts{display:flex;flex-wrap:wrap;gap:16px}\n"
    << ".chart{background:#fff;border:1px solid #ddd}\n"
    << ".chart text{font-size:12px;fill:#222}.chart .title{font-size:14px;font-weight:bold}\n"
    << ".chart .label{font-size:13px}.chart .grid{stroke:#e4e4e4}\n"
    << "table{border-collapse:collapse;background:#fff}td,th{border:1px solid #ccc;padding:3px 10px;"
       "text-align:right}th{background:#eee}td:first-child{text-align:left}\n"
    << "pre{background:#fff;border:1px solid #ddd;padding:10px;font-size:12px}\n"
    << "</style>\n</head>\n<body>\n<h1>magmadnn run: " << html_escape(in.title) << "</h1>\n";

  o << "<div class=\"charts\">\n"
    << svg_line_chart("Loss per epoch", "epoch", "loss",
                      {{"train loss", train_color, false, ep, tl}, {"validation loss", val_color, true, ep, vl}})
    << svg_line_chart("Accuracy per epoch", "epoch", "accuracy",
                      {{"train accuracy", train_color, false, ep, ta},
                       {"validation accuracy", val_color, true, ep, va}})
    << "</div>\n";
  if (in.history.empty()) o << "<p>No epoch has finished yet.</p>\n";

  o << "<h2>Summary</h2>\n<table class=\"summary\">\n";
  if (in.summary.is_object()) {
    for (const auto& [key, value] : in.summary.items()) {
      const std::string v = value.is_string() ? value.get<std::string>()
                            : value.is_number_float() ? fmt(value.get<double>(), 6)
                                                      : value.dump();
      o << "<tr><td>" << html_escape(key) << "</td><td>" << html_escape(v) << "</td></tr>\n";
    }
  }
  o << "</table>\n<h2>Epochs</h2>\n<table class=\"epochs\">\n<tr><th>epoch</th><th>train loss</th><th>train "
       "accuracy</th><th>val loss</th><th>val accuracy</th><th>learning rate</th><th>seconds</th><th>samples/s</th>"
       "</tr>\n";
  for (const auto& r : in.history) {
    o << "<tr><td>" << r.epoch << "</td><td>" << fmt(r.train_loss) << "</td><td>" << fmt(r.train_accuracy)
      << "</td><td>" << fmt(r.val_loss) << "</td><td>" << fmt(r.val_accuracy) << "</td><td>"
      << fmt(r.learning_rate) << "</td><td>" << fmt(r.seconds) << "</td><td>" << fmt(r.samples_per_second, 6)
      << "</td></tr>\n";
  }
  o << "</table>\n<h2>Config</h2>\n<pre class=\"config\">" << html_escape(in.config.dump(2)) << "</pre>\n"
    << "</body>\n</html>\n";
  return o.str();
}

}  // namespace magmadnn::cli
