#include "tune_heat_map.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "page_format.h"

namespace magmadnn::cli {
namespace {

constexpr std::size_t kMostCategories = 12;
constexpr int kBins = 8;

bool ends_with(const std::string& path, const std::string& name) {
  return path == name || (path.size() > name.size() && path.compare(path.size() - name.size(), name.size(), name) == 0 &&
                          path[path.size() - name.size() - 1] == '.');
}

// One axis of the grid: either one slot per distinct value or numeric bins.
class GridAxis {
 public:
  GridAxis() = default;
  GridAxis(const TuneDimension& dim, const std::vector<TuneTrial>& trials) : path_(dim.path) {
    if (dim.spec.contains("values") && dim.spec["values"].is_array()) {
      for (const auto& v : dim.spec["values"]) add(v);
    }
    for (const auto& t : trials) {
      if (t.params.contains(path_)) add(t.params[path_]);
    }
    bool numeric = !values_.empty();
    for (const auto& v : values_) numeric = numeric && v.is_number();
    if (numeric) {
      std::stable_sort(values_.begin(), values_.end(),
                       [](const Json& a, const Json& b) { return a.get<double>() < b.get<double>(); });
    }
    if (numeric && values_.size() > kMostCategories) {
      bin(dim.kind == "log_uniform");
    } else {
      for (const auto& v : values_) labels_.push_back(param_text(v));
    }
  }

  const std::string& path() const { return path_; }
  /// One per slot; the single row of a one-dimensional map has the label "".
  /// An axis no value reached (a search without trials, on a continuous
  /// dimension) has no slot.
  std::vector<std::string> labels() const { return path_.empty() ? std::vector<std::string>{""} : labels_; }

  /// The slot of the trial's value, or -1 when it has none.
  int slot(const TuneTrial& t) const {
    if (path_.empty()) return 0;  // the single row of a one-dimensional map
    if (!t.params.contains(path_)) return -1;
    const Json& v = t.params[path_];
    if (edges_.empty()) {
      const auto it = std::find_if(values_.begin(), values_.end(), [&](const Json& w) { return key(w) == key(v); });
      return it == values_.end() ? -1 : static_cast<int>(it - values_.begin());
    }
    if (!v.is_number()) return -1;
    const double x = v.get<double>();
    const auto it = std::upper_bound(edges_.begin(), edges_.end(), x);
    return static_cast<int>(std::clamp<std::ptrdiff_t>(it - edges_.begin() - 1, 0, kBins - 1));
  }

 private:
  // 64 and 64.0 are one value.
  static std::string key(const Json& v) { return v.is_number() ? page::printf1("%.15g", v.get<double>()) : v.dump(); }

  void add(const Json& v) {
    const std::string k = key(v);
    if (std::none_of(values_.begin(), values_.end(), [&](const Json& w) { return key(w) == k; })) values_.push_back(v);
  }

  void bin(bool log_uniform) {
    const double lo = values_.front().get<double>(), hi = values_.back().get<double>();
    const bool log = lo > 0 && (log_uniform || hi / lo >= 100);
    for (int i = 0; i <= kBins; ++i) {
      const double f = static_cast<double>(i) / kBins;
      edges_.push_back(log ? lo * std::pow(hi / lo, f) : lo + (hi - lo) * f);
    }
    for (int i = 0; i < kBins; ++i) labels_.push_back(page::fmt(edges_[i], 3) + "\xe2\x80\x93" + page::fmt(edges_[i + 1], 3));
  }

  std::string path_;
  std::vector<Json> values_;
  std::vector<double> edges_;  // binned axes only
  std::vector<std::string> labels_;
};

std::string trial_line(const TuneTrial& t) {
  std::string s = "trial " + std::to_string(t.index) + " " + status_name(t.status);
  if (std::isfinite(t.objective)) s += ", objective " + page::fmt(t.objective, 6);
  if (!t.error.empty()) s += ": " + (t.error.size() > 80 ? t.error.substr(0, 77) + "..." : t.error);
  return s;
}

}  // namespace

std::string param_text(const Json& v) {
  if (v.is_number()) return page::printf1("%.6g", v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

HeatMapGrid heat_map_grid(const TuneResults& r) {
  HeatMapGrid g;
  if (r.dimensions.empty()) return g;
  const TuneDimension *rows = nullptr, *cols = nullptr;
  for (const auto& d : r.dimensions) {
    if (!rows && ends_with(d.path, "batch_size")) rows = &d;
    if (!cols && ends_with(d.path, "learning_rate")) cols = &d;
  }
  if (!rows || !cols) {
    rows = r.dimensions.size() > 1 ? &r.dimensions[0] : nullptr;
    cols = &r.dimensions[r.dimensions.size() > 1 ? 1 : 0];
  }
  const GridAxis ya = rows ? GridAxis(*rows, r.trials) : GridAxis(), xa(*cols, r.trials);
  g.row_path = ya.path();
  g.col_path = xa.path();
  g.row_labels = ya.labels();
  g.col_labels = xa.labels();
  // Every index below is into these labels: an axis without values (no
  // trial, continuous dimension) makes an empty grid, never a slot without a label.
  const std::size_t nrows = g.row_labels.size(), ncols = g.col_labels.size();
  g.cells.assign(nrows, std::vector<HeatCell>(ncols));
  std::vector<std::vector<std::vector<const TuneTrial*>>> in(nrows, std::vector<std::vector<const TuneTrial*>>(ncols));
  for (const auto& t : r.trials) {
    const int y = ya.slot(t), x = xa.slot(t);
    if (y < 0 || x < 0 || static_cast<std::size_t>(y) >= nrows || static_cast<std::size_t>(x) >= ncols) {
      ++g.unplaced;
      continue;
    }
    in[static_cast<std::size_t>(y)][static_cast<std::size_t>(x)].push_back(&t);
  }
  const bool minimize = r.minimize();
  for (std::size_t y = 0; y < in.size(); ++y) {
    for (std::size_t x = 0; x < in[y].size(); ++x) {
      HeatCell& cell = g.cells[y][x];
      std::string where = (g.row_path.empty() ? "" : g.row_path + " " + g.row_labels[y] + ", ") + g.col_path + " " +
                          g.col_labels[x];
      cell.trials = static_cast<int>(in[y][x].size());
      if (in[y][x].empty()) {
        cell.tooltip = where + ": no trial";
        continue;
      }
      bool any_ok = false, any_pruned = false;
      double best_ok = kNaN, best_pruned = kNaN;
      auto better = [&](double v, double than) { return std::isnan(than) || (minimize ? v < than : v > than); };
      cell.tooltip = where + ":";
      int listed = 0;
      for (const TuneTrial* t : in[y][x]) {
        if (listed++ < 6) (cell.tooltip += '\n') += trial_line(*t);
        cell.best = cell.best || (r.best && t->index == *r.best);
        const bool has = std::isfinite(t->objective);
        if (t->status == TrialStatus::ok) {
          any_ok = true;
          if (has && better(t->objective, best_ok)) best_ok = t->objective;
        } else if (t->status == TrialStatus::pruned) {
          any_pruned = true;
          if (has && better(t->objective, best_pruned)) best_pruned = t->objective;
        }
      }
      if (listed > 6) cell.tooltip += "\n(and " + std::to_string(listed - 6) + " more)";
      cell.state = any_ok ? HeatCell::ok : any_pruned ? HeatCell::pruned : HeatCell::failed;
      cell.value = any_ok ? best_ok : best_pruned;
    }
  }
  return g;
}

}  // namespace magmadnn::cli
