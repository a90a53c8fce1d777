/// @file conv_bench_output.h
/// How `magmadnn bench conv` presents the records of conv::run_benchmark:
/// a table on the terminal and, with --json, a JSON file.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "magmadnn/conv/bench.h"

namespace magmadnn::cli {

/// A table: one row per (layer, pass, device), one column per algorithm
/// (milliseconds; "-" where not applicable), the fastest marked with '*',
/// then the chooser's pick and its time over the fastest.
void print_conv_bench_table(std::ostream& os, const std::vector<conv::BenchRecord>& records);

/// JSON array, one object per record with keys layer, algorithm, device,
/// pass, seconds, channels, kernel, image (and chosen for auto rows).
/// IOError when the file cannot be written.
void write_conv_bench_json(const std::string& path, const std::vector<conv::BenchRecord>& records);

}  // namespace magmadnn::cli
