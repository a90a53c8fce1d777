/// @file results.h
/// The files a finished search leaves in its folder, beside journal.jsonl:
///  - results.json: {"objective": {"kind", ...}, "searcher", "seed", "best",
///    "dimensions": [...], "trials": [{"index", "params", "status", "attempts",
///    "worker", "seconds", "objective", "final": {"loss", "accuracy",
///    "test_accuracy"}, "curve": [{"epoch", "loss", "accuracy", "seconds"}],
///    "error" (failed only), ...}], ...} (docs/tune.md lists every field);
///  - results.csv: one row per trial, one column per dimension;
///  - best.json: the best trial's train config, which `magmadnn train
///    --config` takes unchanged (absent when no trial has an objective).
/// Every file is written atomically (io::write_file_atomic).
#pragma once

#include <string>

#include "magmadnn/tune/master.h"

namespace magmadnn::tune {

/// results.json's document.
Json results_json(const TuneConfig& config, const SearchResult& result);
/// results.csv's text.
std::string results_csv(const TuneConfig& config, const SearchResult& result);
/// Writes the three files into `dir`.
void write_results(const std::string& dir, const TuneConfig& config, const SearchResult& result);

}  // namespace magmadnn::tune
