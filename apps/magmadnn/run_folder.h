/// @file run_folder.h
/// The folder one `magmadnn train --out DIR` run writes:
///   config.json     the resolved config (what --resume rebuilds the network from)
///   metrics.csv     one line per finished epoch (header line first)
///   summary.json    test_accuracy, test_loss, train_seconds, epochs, samples_per_second, ...
///   checkpoint.bin  the model (weights, optimizer state, epoch) as NeuralNetwork::save writes it
///   report.html     headline, curves, confusion matrix, misclassified images (report.h)
///
/// Guarantees: files are written to a temporary name and renamed, so a run
/// killed mid-write leaves the previous complete version; readers throw
/// IOError naming the file and line of anything malformed.
#pragma once

#include <string>

#include "run_names.h"
#include "magmadnn/model/params.h"
#include "report.h"

namespace magmadnn::cli {

class RunFolder {
 public:
  /// Uses `dir`, creating it (and its parents) when missing.
  explicit RunFolder(std::string dir);

  const std::string& dir() const noexcept { return dir_; }
  std::string file(const std::string& name) const;
  std::string checkpoint_path() const { return file("checkpoint.bin"); }
  bool has_checkpoint() const;

  void write_config(const Json& config) const;
  Json read_config() const;
  void write_metrics(const model::History& history) const;
  model::History read_metrics() const;
  void write_summary(const Json& summary) const;
  Json read_summary() const;
  void write_report(const ReportInput& in) const;

 private:
  void write_atomic(const std::string& name, const std::string& text) const;
  std::string dir_;
};

/// metrics.csv text of `history`, and its inverse.
std::string metrics_csv(const model::History& history);
model::History parse_metrics_csv(const std::string& text, const std::string& source);

}  // namespace magmadnn::cli
