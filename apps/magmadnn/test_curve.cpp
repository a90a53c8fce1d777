#include "test_curve.h"

#include <cstdio>
#include <sstream>

#include "csv_rows.h"
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
  TestCurve curve;
  for (const CsvRow& row : csv_rows(text, source, kHeader)) {
    MAGMADNN_CHECK(row.cells.size() == 3 && row.line.back() != ',', IOError,
                   source << ":" << row.lineno << ": expected 3 fields in \"" << row.line << "\"");
    auto value = [&](std::size_t i) { return csv_number(row, i, source, /*empty_is_nan=*/false); };
    const double epoch = value(0);
    MAGMADNN_CHECK(epoch >= 1 && epoch <= 1e6 && epoch == static_cast<double>(static_cast<unsigned>(epoch)), IOError,
                   source << ":" << row.lineno << ": epoch \"" << row.cells[0] << "\" is not a positive integer");
    curve.push_back({static_cast<unsigned>(epoch), value(1), value(2)});
  }
  return curve;
}

}  // namespace magmadnn::cli
