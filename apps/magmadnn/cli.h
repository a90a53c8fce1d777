/// @file cli.h
/// The `magmadnn` command as a function: main() forwards argv here, and the
/// tests call it in process with their own streams.
///
///   magmadnn train     [--config FILE] [--preset NAME] [overrides] [--out DIR] [--resume]
///   magmadnn evaluate  --checkpoint FILE [--data DIR]
///   magmadnn predict   --checkpoint FILE --input IDX-or-CSV [--output CSV]
///   magmadnn bench conv [--json FILE]
///   magmadnn compare   RUN_DIR... --out FILE
///   magmadnn export    RUN_OR_CHECKPOINT --onnx FILE
///   magmadnn import    FILE.onnx --out DIR [--config FILE [--epochs N]]
///   magmadnn tune      CONFIG --out DIR [--workers N] [--ranks-per-trial K] [--resume] [--seed S]
///
/// Guarantees: returns 0 on success, 2 for a usage or config mistake and 1
/// for a failure while running, after writing "magmadnn: error: ..." to
/// `err`; no exception escapes.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "run_names.h"

namespace magmadnn::cli {

/// Runs the command line `args` (without the program name).
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

/// The subcommands (throw UsageError / ConfigError / magmadnn::Error; run_cli catches).
int train_command(const std::vector<std::string>& args, std::ostream& out);
int evaluate_command(const std::vector<std::string>& args, std::ostream& out);
int predict_command(const std::vector<std::string>& args, std::ostream& out);
int bench_command(const std::vector<std::string>& args, std::ostream& out);
int compare_command(const std::vector<std::string>& args, std::ostream& out);
int tune_command(const std::vector<std::string>& args, std::ostream& out);
/// magmadnn flight DIR: merges a failed job's flight-recorder files (flight_analysis.h).
int flight_command(const std::vector<std::string>& args, std::ostream& out);
/// ONNX (onnx_commands.cpp); a build without ONNX refuses them with a UsageError.
int export_command(const std::vector<std::string>& args, std::ostream& out);
int import_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace magmadnn::cli
