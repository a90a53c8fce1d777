#include "tune_charts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "chart_frame.h"
#include "html.h"
#include "page_format.h"

namespace magmadnn::cli {

using namespace chart;
using page::fmt;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct CurveStyle {
  const char* color;
  const char* width;
  const char* extra;  // dash, opacity
  const char* name;   // in the legend
};
CurveStyle style_of(TrialCurve::Kind k) {
  switch (k) {
    case TrialCurve::ok: return {"#4a86c5", "1.4", " stroke-opacity=\"0.6\"", "completed"};
    case TrialCurve::pruned: return {"#8c8c8c", "1.2", " stroke-dasharray=\"5 3\" stroke-opacity=\"0.8\"", "pruned"};
    case TrialCurve::failed: return {"#d62728", "1.4", " stroke-opacity=\"0.8\"", "failed"};
    case TrialCurve::best: return {"#e6550d", "3", "", "best"};
  }
  return {"#000", "1", "", ""};
}

// The value above which points are drawn at the top edge: twice the 90th
// percentile, when some point lies beyond it.
double clip_above(const std::vector<TrialCurve>& curves) {
  std::vector<double> v;
  for (const auto& c : curves) {
    for (std::size_t i = 0; i < c.x.size() && i < c.y.size(); ++i) {
      if (std::isfinite(c.x[i]) && std::isfinite(c.y[i])) v.push_back(c.y[i]);
    }
  }
  if (v.size() < 10) return kInf;
  std::sort(v.begin(), v.end());
  const double q90 = v[static_cast<std::size_t>(0.9 * static_cast<double>(v.size() - 1))];
  const double cap = q90 > 0 ? 2 * q90 : kInf;
  return v.back() > cap ? cap : kInf;
}

}  // namespace

std::string svg_trial_curves(const std::string& title, const std::string& y_label,
                             const std::vector<TrialCurve>& curves) {
  const double cap = clip_above(curves);
  double xlo = kInf, xhi = -kInf, ylo = kInf, yhi = -kInf;
  for (const auto& c : curves) {
    for (std::size_t i = 0; i < c.x.size() && i < c.y.size(); ++i) {
      if (!std::isfinite(c.x[i]) || !std::isfinite(c.y[i])) continue;
      xlo = std::min(xlo, c.x[i]);
      xhi = std::max(xhi, c.x[i]);
      ylo = std::min(ylo, std::min(c.y[i], cap));
      yhi = std::max(yhi, std::min(c.y[i], cap));
    }
  }
  std::ostringstream o;
  open_chart(o, title);
  if (!std::isfinite(xlo)) return close_without_data(o);
  if (xlo == xhi) {
    xlo -= 1;
    xhi += 1;
  }
  const Axis ya = value_axis(ylo, yhi);
  auto sx = [&](double x) { return L + (x - xlo) / (xhi - xlo) * PW; };
  auto sy = [&](double y) { return T + PH - (std::min(y, cap) - ya.lo) / (ya.hi - ya.lo) * PH; };
  draw_axes(o, ya, sy, std::ceil(xlo), xhi, epoch_step(xhi - xlo), sx, "epoch", y_label);

  // Drawn in this order so that the best lies on top of everything.
  const TrialCurve::Kind order[] = {TrialCurve::ok, TrialCurve::pruned, TrialCurve::failed, TrialCurve::best};
  int counts[4] = {0, 0, 0, 0};
  for (TrialCurve::Kind kind : order) {
    const CurveStyle st = style_of(kind);
    for (const auto& c : curves) {
      if (c.kind != kind) continue;
      std::ostringstream pts;
      int n = 0;
      double last_x = 0, last_y = 0;
      for (std::size_t i = 0; i < c.x.size() && i < c.y.size(); ++i) {
        if (!std::isfinite(c.x[i]) || !std::isfinite(c.y[i])) continue;
        last_x = sx(c.x[i]);
        last_y = sy(c.y[i]);
        pts << (n++ ? " " : "") << px(last_x) << ',' << px(last_y);
      }
      if (n == 0) continue;
      ++counts[kind];
      o << "<g class=\"trial-curve " << st.name << "\" data-trial=\"" << c.trial << "\"><title>"
        << html_escape(c.tooltip) << "</title><polyline fill=\"none\" stroke=\"" << st.color << "\" stroke-width=\""
        << st.width << "\"" << st.extra << " points=\"" << pts.str() << "\"/>";
      // A one-epoch curve has no line; its end dot still shows where it finished.
      if (n == 1 || kind == TrialCurve::best) {
        o << "<circle cx=\"" << px(last_x) << "\" cy=\"" << px(last_y) << "\" r=\"3\" fill=\"" << st.color << "\"/>";
      }
      o << "</g>\n";
    }
  }
  int rows = 0;
  for (int k : counts) rows += k > 0;
  const double lw = 150, lx = L + PW - lw, top = T + 14;
  o << "<rect class=\"legend-box\" x=\"" << px(lx - 6) << "\" y=\"" << px(top - 13) << "\" width=\"" << px(lw + 2)
    << "\" height=\"" << 18 * rows + 1 << "\" fill=\"#fff\" fill-opacity=\"0.85\"/>\n";
  int row = 0;
  for (TrialCurve::Kind kind : {TrialCurve::best, TrialCurve::ok, TrialCurve::pruned, TrialCurve::failed}) {
    if (counts[kind] == 0) continue;
    const CurveStyle st = style_of(kind);
    const double ly = top + 18 * row++;
    o << "<g class=\"legend\"><line x1=\"" << px(lx) << "\" x2=\"" << px(lx + 24) << "\" y1=\"" << ly - 4
      << "\" y2=\"" << ly - 4 << "\" stroke=\"" << st.color << "\" stroke-width=\"" << st.width << "\"" << st.extra
      << "/><text x=\"" << px(lx + 30) << "\" y=\"" << ly << "\">" << st.name << " (" << counts[kind]
      << ")</text></g>\n";
  }
  if (std::isfinite(cap)) {
    o << "<text x=\"" << L + 6 << "\" y=\"" << T + 14 << "\" class=\"clipped\">values above " << fmt(cap, 3)
      << " drawn at the top edge</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

Histogram histogram_of(const std::vector<double>& values) {
  Histogram h;
  double lo = kInf, hi = -kInf;
  std::size_t n = 0;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    ++n;
  }
  if (n == 0) return h;
  if (lo == hi) {
    const double pad = lo == 0 ? 0.5 : std::abs(lo) * 0.05;
    h.edges = {lo - pad, hi + pad};
    h.counts = {static_cast<std::int64_t>(n)};
    return h;
  }
  const int k = std::min(20, static_cast<int>(std::ceil(std::log2(static_cast<double>(n)))) + 1);
  for (int i = 0; i <= k; ++i) h.edges.push_back(i == k ? hi : lo + (hi - lo) * i / k);
  h.counts.assign(static_cast<std::size_t>(k), 0);
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    const int b = std::min(k - 1, static_cast<int>(std::floor((v - lo) / (hi - lo) * k)));
    ++h.counts[static_cast<std::size_t>(b)];
  }
  return h;
}

std::string svg_histogram(const std::string& title, const std::string& x_label, const std::vector<double>& edges,
                          const std::vector<std::int64_t>& counts) {
  std::ostringstream o;
  open_chart(o, title);
  if (counts.empty() || edges.size() != counts.size() + 1) return close_without_data(o);
  const Axis xa = value_axis(edges.front(), edges.back());
  const double most = static_cast<double>(*std::max_element(counts.begin(), counts.end()));
  // Counts are whole: ticks every whole number at least.
  const double step = std::max(1.0, std::ceil(nice_step(std::max(most, 1.0), 5)));
  const Axis ya{0, std::max(step, std::ceil(most / step) * step), step};
  auto sx = [&](double x) { return L + (x - xa.lo) / (xa.hi - xa.lo) * PW; };
  auto sy = [&](double y) { return T + PH - y / ya.hi * PH; };
  draw_axes(o, ya, sy, xa.lo, xa.hi, xa.step, sx, x_label, "trials");
  o << "<g class=\"bars\" fill=\"#756bb1\">\n";
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const double x0 = sx(edges[i]), x1 = sx(edges[i + 1]), c = static_cast<double>(counts[i]);
    o << "<rect class=\"bin\" data-count=\"" << counts[i] << "\" x=\"" << px(x0 + 1) << "\" y=\"" << px(sy(c))
      << "\" width=\"" << px(std::max(1.0, x1 - x0 - 2)) << "\" height=\"" << px(sy(0) - sy(c)) << "\"><title>"
      << fmt(edges[i]) << (i + 1 == counts.size() ? " to " : " to under ") << fmt(edges[i + 1]) << ": " << counts[i]
      << (counts[i] == 1 ? " trial" : " trials") << "</title></rect>\n";
    if (counts[i] > 0) {
      o << "<text x=\"" << px((x0 + x1) / 2) << "\" y=\"" << px(sy(c) - 4)
        << "\" text-anchor=\"middle\">" << counts[i] << "</text>\n";
    }
  }
  o << "</g>\n</svg>\n";
  return o.str();
}

namespace {

// Light yellow (worst) through green to deep blue (best).
std::string scale_colour(double t) {
  static const double stops[][3] = {{255, 255, 204}, {161, 218, 180}, {65, 182, 196}, {44, 127, 184}, {37, 52, 148}};
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * 4;
  const int i = std::min(3, static_cast<int>(t));
  const double f = t - i;
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(std::lround(stops[i][0] + f * (stops[i + 1][0] - stops[i][0]))),
                static_cast<int>(std::lround(stops[i][1] + f * (stops[i + 1][1] - stops[i][1]))),
                static_cast<int>(std::lround(stops[i][2] + f * (stops[i + 1][2] - stops[i][2]))));
  return buf;
}

// Axis labels longer than a cell are cut; the tooltip keeps them whole.
std::string short_label(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : s.substr(0, n - 1) + "\xe2\x80\xa6";  // U+2026
}

}  // namespace

std::string svg_heat_map(const std::string& title, const std::string& x_label, const std::string& y_label,
                         const std::vector<std::string>& row_labels, const std::vector<std::string>& col_labels,
                         const std::vector<std::vector<HeatCell>>& cells, bool minimize) {
  const double cw = 64, ch = 34, left = 96, top = 40, right = 124, bottom = 56;
  const std::size_t rows = row_labels.size(), cols = col_labels.size();
  const double w = left + cw * static_cast<double>(std::max<std::size_t>(cols, 4)) + right;
  const double h = top + ch * static_cast<double>(std::max<std::size_t>(rows, 1)) + bottom;
  std::ostringstream o;
  o << "<svg class=\"chart heat\" role=\"img\" width=\"" << w << "\" height=\"" << h << "\" viewBox=\"0 0 " << w
    << ' ' << h << "\" aria-label=\"" << html_escape(title) << "\">\n<text x=\"" << w / 2
    << "\" y=\"20\" text-anchor=\"middle\" class=\"title\">" << html_escape(title) << "</text>\n";
  double lo = kInf, hi = -kInf;
  for (const auto& row : cells) {
    for (const auto& c : row) {
      if (c.state == HeatCell::ok && std::isfinite(c.value)) {
        lo = std::min(lo, c.value);
        hi = std::max(hi, c.value);
      }
    }
  }
  if (rows == 0 || cols == 0) {
    o << "<text x=\"" << w / 2 << "\" y=\"" << top + ch / 2 << "\" text-anchor=\"middle\">no data</text>\n</svg>\n";
    return o.str();
  }
  // 1 at the best end of the ok values, 0 at the worst.
  auto goodness = [&](double v) { return hi > lo ? (minimize ? hi - v : v - lo) / (hi - lo) : 1.0; };
  for (std::size_t r = 0; r < rows; ++r) {
    const double y = top + ch * static_cast<double>(r);
    o << "<text x=\"" << left - 8 << "\" y=\"" << px(y + ch / 2 + 4) << "\" text-anchor=\"end\"><title>"
      << html_escape(row_labels[r]) << "</title>" << html_escape(short_label(row_labels[r], 14)) << "</text>\n";
    for (std::size_t c = 0; c < cols && c < cells[r].size(); ++c) {
      const HeatCell& cell = cells[r][c];
      const double x = left + cw * static_cast<double>(c);
      std::string fill = "#fff", text_colour = "#999", word = "\xe2\x80\x94";  // U+2014: no trial
      const char* state = "empty";
      if (cell.state == HeatCell::ok && !std::isfinite(cell.value)) {  // completed, but no objective (not ranked)
        fill = "#f7f7f7";
        text_colour = "#666";
        word = "n/a";
        state = "ok";
      } else if (cell.state == HeatCell::ok) {
        const double g = goodness(cell.value);
        fill = scale_colour(g);
        text_colour = g > 0.6 ? "#fff" : "#222";
        word = fmt(cell.value, 4);
        state = "ok";
      } else if (cell.state == HeatCell::pruned) {
        fill = "#e6e6e6";
        text_colour = "#666";
        word = std::isfinite(cell.value) ? fmt(cell.value, 4) : "pruned";
        state = "pruned";
      } else if (cell.state == HeatCell::failed) {
        fill = "#fbd5d5";
        text_colour = "#b71c1c";
        word = "\xe2\x9c\x95 failed";  // U+2715 multiplication x
        state = "failed";
      }
      o << "<g class=\"cell " << state << (cell.best ? " best" : "") << "\" data-row=\"" << r << "\" data-col=\""
        << c << "\"><title>" << html_escape(cell.tooltip) << "</title><rect x=\"" << px(x) << "\" y=\"" << px(y)
        << "\" width=\"" << cw << "\" height=\"" << ch << "\" fill=\"" << fill << "\" stroke=\"#fff\"/>";
      if (cell.state == HeatCell::pruned) {  // hatched, so it reads as "stopped early" without colour
        o << "<path d=\"M" << px(x) << ',' << px(y + ch) << " l" << ch << ",-" << ch << " M" << px(x + 30) << ','
          << px(y + ch) << " l" << ch << ",-" << ch << "\" stroke=\"#cfcfcf\"/>";
      }
      o << "<text class=\"v\" x=\"" << px(x + cw / 2) << "\" y=\"" << px(y + ch / 2 + 4)
        << "\" text-anchor=\"middle\" style=\"fill:" << text_colour
        << (cell.state == HeatCell::pruned ? ";font-style:italic" : "") << "\">" << html_escape(word) << "</text>";
      if (cell.trials > 1) {
        o << "<text x=\"" << px(x + cw - 3) << "\" y=\"" << px(y + ch - 3) << "\" text-anchor=\"end\" style=\"font-size:9px;fill:"
          << text_colour << "\">\xc3\x97" << cell.trials << "</text>";  // U+00D7
      }
      if (cell.best) {
        o << "<rect x=\"" << px(x + 1.5) << "\" y=\"" << px(y + 1.5) << "\" width=\"" << cw - 3 << "\" height=\""
          << ch - 3 << "\" fill=\"none\" stroke=\"#e6550d\" stroke-width=\"3\"/><text x=\"" << px(x + 4) << "\" y=\""
          << px(y + 12) << "\" style=\"font-size:12px;fill:#e6550d\">\xe2\x98\x85</text>";  // U+2605 star
      }
      o << "</g>\n";
    }
  }
  const double bottom_y = top + ch * static_cast<double>(rows);
  for (std::size_t c = 0; c < cols; ++c) {
    o << "<text x=\"" << px(left + cw * (static_cast<double>(c) + 0.5)) << "\" y=\"" << px(bottom_y + 16)
      << "\" text-anchor=\"middle\"><title>" << html_escape(col_labels[c]) << "</title>"
      << html_escape(short_label(col_labels[c], 9)) << "</text>\n";
  }
  o << "<text x=\"" << px(left + cw * static_cast<double>(cols) / 2) << "\" y=\"" << px(bottom_y + 40)
    << "\" text-anchor=\"middle\" class=\"label\">" << html_escape(x_label) << "</text>\n";
  o << "<text transform=\"translate(16," << px(top + ch * static_cast<double>(rows) / 2)
    << ") rotate(-90)\" text-anchor=\"middle\" class=\"label\">" << html_escape(y_label) << "</text>\n";

  // The colour scale, best at the top.
  if (std::isfinite(lo)) {
    const double sx0 = left + cw * static_cast<double>(cols) + 22, sh = std::min(150.0, ch * static_cast<double>(rows));
    for (int i = 0; i < 10; ++i) {
      o << "<rect x=\"" << px(sx0) << "\" y=\"" << px(top + sh * i / 10) << "\" width=\"14\" height=\""
        << px(sh / 10 + 0.5) << "\" fill=\"" << scale_colour(1 - (i + 0.5) / 10) << "\"/>\n";
    }
    const double best = minimize ? lo : hi, worst = minimize ? hi : lo;
    o << "<text x=\"" << px(sx0 + 20) << "\" y=\"" << px(top + 10) << "\">" << fmt(best, 4) << " best</text>\n"
      << "<text x=\"" << px(sx0 + 20) << "\" y=\"" << px(top + sh) << "\">" << fmt(worst, 4) << " worst</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace magmadnn::cli
