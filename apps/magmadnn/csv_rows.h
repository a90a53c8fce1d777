/// @file csv_rows.h
/// Reading back the small numeric CSV files a run folder holds
/// (metrics.csv, test_per_epoch.csv): the header checked, the rows split
/// into cells, a cell read as a number, each failure an IOError naming
/// SOURCE:LINE and the field.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace magmadnn::cli {

struct CsvRow {
  int lineno;                      ///< 1-based line in the file
  std::string line;                ///< the text, without a trailing CR
  std::vector<std::string> cells;  ///< split at ','; a trailing ',' gives an empty last cell
};

/// The data rows of `text` (blank lines skipped) after checking that its
/// first line is `header`.
std::vector<CsvRow> csv_rows(const std::string& text, const std::string& source, const std::string& header);

/// Cell `i` of `row` as a number; an empty cell is NaN when `empty_is_nan`,
/// else an error like any other non-number.
double csv_number(const CsvRow& row, std::size_t i, const std::string& source, bool empty_is_nan);

}  // namespace magmadnn::cli
