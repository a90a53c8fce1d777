#include "csv_rows.h"

#include <limits>
#include <sstream>

#include "magmadnn/core/errors.h"

namespace magmadnn::cli {

std::vector<CsvRow> csv_rows(const std::string& text, const std::string& source, const std::string& header) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  MAGMADNN_CHECK(line == header, IOError,
                 source << ":1: unexpected header \"" << line << "\" (expected \"" << header << "\")");
  std::vector<CsvRow> rows;
  for (int lineno = 2; std::getline(in, line); ++lineno) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    CsvRow row{lineno, line, {}};
    std::stringstream ls(line);
    for (std::string cell; std::getline(ls, cell, ',');) row.cells.push_back(cell);
    if (line.back() == ',') row.cells.emplace_back();
    rows.push_back(std::move(row));
  }
  return rows;
}

double csv_number(const CsvRow& row, std::size_t i, const std::string& source, bool empty_is_nan) {
  const std::string& cell = row.cells[i];
  if (cell.empty() && empty_is_nan) return std::numeric_limits<double>::quiet_NaN();
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(cell, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  MAGMADNN_CHECK(used == cell.size() && !cell.empty(), IOError,
                 source << ":" << row.lineno << ": field " << i + 1 << " is not a number: \"" << cell << "\"");
  return v;
}

}  // namespace magmadnn::cli
