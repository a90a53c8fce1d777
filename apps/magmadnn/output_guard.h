/// @file output_guard.h
/// The checks every writing command makes before it writes anything, so that
/// no command replaces one of its own inputs or a file of a training run or a
/// search it was not asked to write: `compare --out RUN/metrics.csv` would
/// otherwise put its page over the run's metrics, `tune --out RUN` the
/// search's report over the run's report.html.
///
/// A folder "holds a training run" when it has any of checkpoint.bin,
/// config.json, metrics.csv, summary.json, test_per_epoch.csv, .previous/ or
/// .previous.partial/ (the files `magmadnn train` writes, report.html aside,
/// which a search writes too); it "holds a search" when it has any of
/// journal.jsonl, results.json, results.csv or best.json.
///
/// Guarantees: every refusal is a UsageError (exit 2) naming the path and
/// what it would have replaced; nothing is written by a check that refuses.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace magmadnn::cli {

enum class FolderKind { none, run, search };

/// What `dir` holds (none when it does not exist or holds neither).
FolderKind folder_kind(const std::string& dir);

/// The files `magmadnn tune` writes into its folder.
const std::vector<std::string>& search_files();

/// True when `a` and `b` name the same file (also through links, `..` and
/// `.`, or before `b` exists).
bool same_file(const std::string& a, const std::string& b);

/// An input of a command: its flag (or "RUN_DIR") and its path.
struct NamedInput {
  std::string flag, path;
};

/// Refuses an output FILE `path` (given as `--flag`) that is one of
/// `inputs` (a file, or a file inside an input folder), or a file of the
/// names a run writes inside a folder that holds a training run, or of the
/// names a search writes inside a folder that holds a search; and one that
/// cannot be written (a folder, a missing or read-only parent: the reason is
/// named), by creating and removing a probe file beside it, so that a long
/// computation never ends in a write that fails.
void check_output_file(const std::string& command, const std::string& flag, const std::string& path,
                       const std::vector<NamedInput>& inputs);

/// Refuses `dir` as the folder of `wanted` (a run for train, a search for
/// tune) when it holds the other kind.
void check_output_folder(const std::string& command, const std::string& dir, FolderKind wanted);

}  // namespace magmadnn::cli
