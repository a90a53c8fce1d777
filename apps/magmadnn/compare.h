/// @file compare.h
/// compare.html: several run folders on one self-contained page (inline CSS
/// and SVG, no script, no external resource), the way SHM-Learn-Dist's
/// figures 6.2 and 6.3 compare worker counts:
///  - the training loss against training time, one curve per run;
///  - the accuracy against training time, one curve per run: the test split
///    scored after every epoch where the run recorded it (the spec's opt-in
///    "test_every_epoch", test_per_epoch.csv), else the validation accuracy
///    of metrics.csv, else the training accuracy; the chart's title, its
///    axis and each legend label say which;
///  - a table: run, ranks, strategy, global batch, epochs, final training
///    loss, test loss and accuracy (the single scoring after training, from
///    summary.json), training time and samples/s.
/// Time is the running sum of metrics.csv's `seconds` (the training loop of
/// each epoch; validation and per-epoch test scoring are not counted), so the
/// curves of runs that differ only in how they train line up on one axis.
///
/// A curve is labelled "N rank(s)", then the strategy when the run names one,
/// then the run folder's name ("2 ranks, allreduce: mlp-np2").
///
/// Requires: each folder holds config.json, metrics.csv and summary.json
/// (read_compare_run throws IOError naming the folder and what is missing);
/// the runs train on one data set (check_comparable throws ValueError
/// naming both). summary.json's "ranks" and "strategy" are read when
/// present; absent, the run is one process without a strategy.
/// Guarantees: every string taken from the runs is HTML-escaped; a run with
/// no finished epoch still has its row in the table; a chart no run has a
/// point for says "no data".
#pragma once

#include <string>
#include <vector>

#include "magmadnn/model/params.h"
#include "run_names.h"
#include "test_curve.h"

namespace magmadnn::cli {

struct CompareRun {
  std::string dir;         ///< as given on the command line
  std::string name;        ///< the folder's own name (its last component)
  Json config, summary;
  model::History history;  ///< metrics.csv
  TestCurve test_curve;    ///< test_per_epoch.csv; empty when the run did not record it
};

/// Reads the run in `dir` (see Requires above).
CompareRun read_compare_run(const std::string& dir);

/// Throws ValueError unless `runs` is non-empty and every run trained on the
/// data set of the first (config data.dataset, and data.dir for "idx" data).
void check_comparable(const std::vector<CompareRun>& runs);

/// Worker processes of the run (summary.json "ranks"; 1 when absent).
long long ranks_of(const CompareRun& run);
/// The distributed strategy (summary.json "strategy"; empty when absent).
std::string strategy_of(const CompareRun& run);
/// The label of the run's curves (see the file comment).
std::string run_label(const CompareRun& run);

/// The HTML text of the page.
std::string render_compare(const std::vector<CompareRun>& runs);

}  // namespace magmadnn::cli
