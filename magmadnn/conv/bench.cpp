#include "magmadnn/conv/bench.h"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>

#include "magmadnn/backend/registry.h"
#include "magmadnn/conv/chooser.h"
#include "magmadnn/conv/timing.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::conv {
namespace {

struct Layer {
  std::string name;
  std::int64_t c, hw, k, rs, pad;
};

std::vector<Layer> all_layers() {
  std::vector<Layer> v = {{"lenet_conv1", 1, 32, 6, 5, 0}, {"lenet_conv2", 6, 14, 16, 5, 0}};
  for (std::int64_t hw : {32, 56})
    for (std::int64_t c : {64, 128, 256})
      v.push_back({"vgg_" + std::to_string(c) + "_" + std::to_string(hw) + "x" + std::to_string(hw), c, hw, c, 3, 1});
  v.push_back({"large7_32_56x56", 32, 56, 32, 7, 3});
  v.push_back({"large9_16_64x64", 16, 64, 16, 9, 4});
  return v;
}

template <typename T>
void bench_device(const BenchOptions& o, const std::vector<Layer>& layers, DeviceKind dev,
                  std::vector<BenchRecord>& out) {
  const std::string dname = dev == DeviceKind::CPU ? "cpu" : "cuda";
  const int repeats = std::max(1, o.repeats);
  const TimingRounds rounds{.max_rounds = repeats, .min_rounds = repeats};
  for (const Layer& l : layers) {
    ConvParams g;
    g.pad_h = g.pad_w = l.pad;
    const ConvProblem pr = make_problem(Shape{o.batch, l.c, l.hw, l.hw}, Shape{l.k, l.c, l.rs, l.rs}, g);
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) {
      if (!o.passes.empty() && std::find(o.passes.begin(), o.passes.end(), pass_name(pass)) == o.passes.end()) continue;
      std::vector<ConvAlgorithm<T>*> cands;
      std::vector<std::string> labels;
      for (ConvAlgorithm<T>* a : algorithms<T>(dev)) {
        if (!a->supports(pr, pass)) continue;
        if (a->id() == Algo::Direct && pr.macs() > o.direct_max_macs) continue;
        cands.push_back(a);
        labels.push_back(algo_name(a->id()));
      }
      std::string chosen;
      if (o.include_auto) {
        ConvAlgorithm<T>& a = choose<T>(pr, pass, dev, 0);
        chosen = algo_name(a.id());
        cands.push_back(&a);
        labels.push_back("auto");
      }
      const std::vector<std::optional<double>> best = time_algorithms<T>(cands, pr, pass, dev, 0, rounds);
      for (std::size_t i = 0; i < cands.size(); ++i) {
        if (!best[i]) continue;  // could not run on this device (e.g. out of memory for its workspace)
        out.push_back({l.name, labels[i], dname, pass_name(pass), *best[i], l.c, l.rs,
                       labels[i] == "auto" ? chosen : "", l.hw});
      }
    }
  }
}

std::string json_escape(const std::string& s) {
  std::string r;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') r += '\\';
    r += ch;
  }
  return r;
}

}  // namespace

std::vector<std::string> bench_layer_names() {
  std::vector<std::string> v;
  for (const Layer& l : all_layers()) v.push_back(l.name);
  return v;
}

std::vector<BenchRecord> run_benchmark(const BenchOptions& o) {
  MAGMADNN_CHECK(o.dtype == "float" || o.dtype == "double", ValueError,
                 "bench conv: dtype must be float or double, got '" << o.dtype << "'");
  MAGMADNN_CHECK(o.batch >= 1, ValueError, "bench conv: batch must be >= 1, got " << o.batch);
  std::vector<Layer> layers;
  for (const Layer& l : all_layers()) {
    if (o.layers.empty() || std::find(o.layers.begin(), o.layers.end(), l.name) != o.layers.end()) layers.push_back(l);
  }
  for (const std::string& n : o.layers) {
    const auto names = bench_layer_names();
    if (std::find(names.begin(), names.end(), n) == names.end()) {
      std::string valid;
      for (const auto& v : names) valid += (valid.empty() ? "" : ", ") + v;
      MAGMADNN_THROW(ValueError, "bench conv: unknown layer '" << n << "'; layers: " << valid);
    }
  }
  std::vector<BenchRecord> out;
  std::vector<DeviceKind> devs;
  if (o.cpu) devs.push_back(DeviceKind::CPU);
  if (o.cuda && has_cuda_device()) devs.push_back(DeviceKind::CUDA);
  for (DeviceKind d : devs) {
    if (o.dtype == "float") {
      bench_device<float>(o, layers, d, out);
    } else {
      bench_device<double>(o, layers, d, out);
    }
  }
  return out;
}

namespace {

// The convolution issue's targets, checked on the records of this run.
void print_targets(std::ostream& os, const std::vector<BenchRecord>& recs) {
  std::map<std::string, const BenchRecord*> by;  // "layer|pass|device|algorithm"
  for (const auto& r : recs) by[r.layer + "|" + r.pass + "|" + r.device + "|" + r.algorithm] = &r;
  auto get = [&](const BenchRecord& r, const std::string& algo) -> const BenchRecord* {
    auto it = by.find(r.layer + "|" + r.pass + "|" + r.device + "|" + algo);
    return it == by.end() ? nullptr : it->second;
  };
  std::map<std::string, double> best;  // "layer|pass|device" -> fastest non-auto seconds
  for (const auto& r : recs) {
    if (r.algorithm == "auto") continue;
    auto [it, fresh] = best.try_emplace(r.layer + "|" + r.pass + "|" + r.device, r.seconds);
    if (!fresh) it->second = std::min(it->second, r.seconds);
  }
  int wino_n = 0, wino_ok = 0, fft_n = 0, fft_ok = 0, pick_n = 0, pick_ok = 0;
  double wino_min = 1e300, fft_min = 1e300, pick_worst = 0;
  for (const auto& r : recs) {
    if (r.device != "cpu") continue;
    if (r.algorithm == "im2col" && r.kernel == 3 && r.channels >= 64) {
      if (const auto* w = get(r, "winograd_f4x4")) {
        const double q = r.seconds / w->seconds;
        ++wino_n, wino_ok += q >= 1.5, wino_min = std::min(wino_min, q);
      }
    }
    if (r.algorithm == "im2col" && r.kernel >= 7 && r.image >= 56) {
      if (const auto* f = get(r, "fft")) {
        const double q = r.seconds / f->seconds;
        ++fft_n, fft_ok += q > 1.0, fft_min = std::min(fft_min, q);
      }
    }
    if (r.algorithm == "auto") {
      if (const auto* p = get(r, r.chosen)) {
        const double q = p->seconds / best.at(r.layer + "|" + r.pass + "|" + r.device);
        ++pick_n, pick_ok += q <= 1.10, pick_worst = std::max(pick_worst, q);
      }
    }
  }
  auto line = [&](const char* what, int ok, int n, const char* stat, double v) {
    if (n == 0) return;
    os << "  " << what << ": " << ok << "/" << n << " cases (" << stat << " " << std::fixed << std::setprecision(2) << v
       << ")\n";
  };
  if (wino_n + fft_n + pick_n == 0) return;
  os << "targets (cpu):\n";
  line("winograd_f4x4 >= 1.5x faster than im2col on 3x3 layers with >= 64 channels", wino_ok, wino_n,
       "smallest ratio", wino_min);
  line("fft faster than im2col for kernels >= 7x7 on >= 56x56 images", fft_ok, fft_n, "smallest ratio", fft_min);
  line("chooser's pick within 10% of the best", pick_ok, pick_n, "worst pick/best", pick_worst);
}

}  // namespace

void print_bench_table(std::ostream& os, const std::vector<BenchRecord>& recs) {
  std::vector<std::string> algos;  // columns in order of first appearance
  std::vector<std::string> rows;
  std::map<std::string, std::map<std::string, double>> t;
  for (const auto& r : recs) {
    const std::string row = r.layer + "|" + r.pass + "|" + r.device;
    if (!t.count(row)) rows.push_back(row);
    t[row][r.algorithm] = r.seconds;
    if (std::find(algos.begin(), algos.end(), r.algorithm) == algos.end()) algos.push_back(r.algorithm);
  }
  // "auto" last, next to the pick it ran.
  if (auto a = std::find(algos.begin(), algos.end(), "auto"); a != algos.end()) std::rotate(a, a + 1, algos.end());
  os << std::left << std::setw(18) << "layer" << std::setw(16) << "pass" << std::setw(7) << "device";
  for (const auto& a : algos) os << std::right << std::setw(15) << a;
  os << std::right << std::setw(15) << "pick" << std::setw(10) << "pick/best" << "   (ms, * = fastest)\n";
  std::map<std::string, std::string> chosen;
  for (const auto& r : recs)
    if (r.algorithm == "auto") chosen[r.layer + "|" + r.pass + "|" + r.device] = r.chosen;
  for (const auto& row : rows) {
    std::stringstream ss(row);
    std::string layer, pass, dev;
    std::getline(ss, layer, '|'), std::getline(ss, pass, '|'), std::getline(ss, dev, '|');
    double best = 1e300;
    for (const auto& [a, s] : t[row])
      if (a != "auto") best = std::min(best, s);
    os << std::left << std::setw(18) << layer << std::setw(16) << pass << std::setw(7) << dev;
    for (const auto& a : algos) {
      auto it = t[row].find(a);
      std::ostringstream cell;
      if (it == t[row].end()) {
        cell << "-";
      } else {
        cell << std::fixed << std::setprecision(3) << it->second * 1e3 << (a != "auto" && it->second == best ? "*" : " ");
      }
      os << std::right << std::setw(15) << cell.str();
    }
    // The pick is judged on its own column: the same runs, interleaved with
    // the others, so machine noise does not count against it.
    const auto c = chosen.find(row);
    const auto pick = c == chosen.end() ? t[row].end() : t[row].find(c->second);
    std::ostringstream ratio;
    if (pick != t[row].end()) ratio << std::fixed << std::setprecision(2) << pick->second / best;
    os << std::right << std::setw(15) << (c == chosen.end() ? "-" : c->second) << std::setw(10)
       << (pick == t[row].end() ? "-" : ratio.str()) << "\n";
  }
  print_targets(os, recs);
}

void write_bench_json(const std::string& path, const std::vector<BenchRecord>& recs) {
  std::ofstream f(path);
  MAGMADNN_CHECK(f.good(), IOError, "bench conv: cannot write " << path);
  f << "[\n";
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const auto& r = recs[i];
    f << "  {\"layer\": \"" << json_escape(r.layer) << "\", \"algorithm\": \"" << json_escape(r.algorithm)
      << "\", \"device\": \"" << r.device << "\", \"pass\": \"" << r.pass << "\", \"seconds\": " << std::setprecision(6)
      << r.seconds << ", \"channels\": " << r.channels << ", \"kernel\": " << r.kernel << ", \"image\": " << r.image;
    if (!r.chosen.empty()) f << ", \"chosen\": \"" << json_escape(r.chosen) << "\"";
    f << "}" << (i + 1 < recs.size() ? "," : "") << "\n";
  }
  f << "]\n";
  MAGMADNN_CHECK(f.good(), IOError, "bench conv: error while writing " << path);
}

}  // namespace magmadnn::conv
