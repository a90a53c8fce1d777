/// @file tune_heat_map.h
/// The grid of the tune page's heat map (SHM-Learn-Dist §5: batch size x
/// learning rate): which two dimensions, their values, and what each cell
/// holds.
///
/// Dimensions: the one whose path ends in "batch_size" gives the rows and the
/// one ending in "learning_rate" the columns; when either is missing, the
/// first dimension gives the rows and the second the columns; a single
/// dimension gives one row.
/// Values of an axis: the dimension's own "values" list when it has one,
/// then every value a trial took, each once; numbers in increasing order,
/// other values in order of appearance. More than 12 distinct numbers (a
/// continuous distribution) are put into 8 bins of equal width, or equal
/// ratio when the dimension is log-uniform or spans two decades or more.
/// A cell shows the best objective of its completed trials; without one,
/// the cell is "pruned" when a trial there was pruned, "failed" when one
/// failed, and empty when no trial fell there. The cell holding the best
/// trial is marked.
#pragma once

#include <string>
#include <vector>

#include "tune_charts.h"
#include "tune_results.h"

namespace magmadnn::cli {

struct HeatMapGrid {
  std::string row_path, col_path;  ///< empty: no such dimension
  std::vector<std::string> row_labels, col_labels;
  std::vector<std::vector<HeatCell>> cells;  ///< [row][col]
  int unplaced = 0;  ///< trials lacking a value for one of the two dimensions
};

/// The grid of `r` (empty labels when r has no dimension).
HeatMapGrid heat_map_grid(const TuneResults& r);

/// The value as the page writes it: numbers "%.6g", strings as they are,
/// anything else as JSON.
std::string param_text(const Json& v);

}  // namespace magmadnn::cli
