#include "test_curve.h"

#include <cstdio>
#include <sstream>

#include "magmadnn/core/errors.h"

namespace magmadnn::cli {
namespace {

const char* kHeader = "epoch,test_loss,test_accuracy";

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

std::string test_curve_csv(const TestCurve& curve) {
  std::string s = std::string(kHeader) + "\n";
  for (const auto& t : curve) s += std::to_string(t.epoch) + ',' + num(t.loss) + ',' + num(t.accuracy) + '\n';
  return s;
}

TestCurve parse_test_curve_csv(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  MAGMADNN_CHECK(line == kHeader, IOError,
                 source << ":1: unexpected header \"" << line << "\" (expected \"" << kHeader << "\")");
  TestCurve curve;
  for (int lineno = 2; std::getline(in, line); ++lineno) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string cell; std::getline(ls, cell, ',');) f.push_back(cell);
    MAGMADNN_CHECK(f.size() == 3 && line.back() != ',', IOError,
                   source << ":" << lineno << ": expected 3 fields in \"" << line << "\"");
    auto value = [&](std::size_t i) {
      std::size_t used = 0;
      double v = 0;
      try {
        v = std::stod(f[i], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      MAGMADNN_CHECK(used == f[i].size() && !f[i].empty(), IOError,
                     source << ":" << lineno << ": field " << i + 1 << " is not a number: \"" << f[i] << "\"");
      return v;
    };
    const double epoch = value(0);
    MAGMADNN_CHECK(epoch >= 1 && epoch <= 1e6 && epoch == static_cast<double>(static_cast<unsigned>(epoch)), IOError,
                   source << ":" << lineno << ": epoch \"" << f[0] << "\" is not a positive integer");
    curve.push_back({static_cast<unsigned>(epoch), value(1), value(2)});
  }
  return curve;
}

}  // namespace magmadnn::cli
