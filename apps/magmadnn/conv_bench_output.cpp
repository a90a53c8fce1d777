#include "conv_bench_output.h"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>

#include "magmadnn/core/errors.h"

namespace magmadnn::cli {
namespace {

std::string json_escape(const std::string& s) {
  std::string r;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') r += '\\';
    r += ch;
  }
  return r;
}

}  // namespace

void print_conv_bench_table(std::ostream& os, const std::vector<conv::BenchRecord>& recs) {
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
}

void write_conv_bench_json(const std::string& path, const std::vector<conv::BenchRecord>& recs) {
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

}  // namespace magmadnn::cli
