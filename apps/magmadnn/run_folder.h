/// @file run_folder.h
/// The folder one `magmadnn train --out DIR` run writes:
///   config.json     the resolved config (what --resume rebuilds the network from)
///   metrics.csv     one line per finished epoch (header line first)
///   summary.json    test_accuracy, test_loss, train_seconds, epochs, samples_per_second, ...
///   checkpoint.bin  the model (weights, optimizer state, epoch) as NeuralNetwork::save writes it
///   report.html     headline, curves, confusion matrix, misclassified images (report.h)
///   test_per_epoch.csv  the test split scored after every epoch; only with the
///                   spec's "test_every_epoch" (test_curve.h)
///
/// Guarantees: files are written through io::AtomicFile (a temporary file,
/// fsynced and renamed), so a run killed mid-write leaves the previous
/// complete version; readers throw IOError naming the file and line of
/// anything malformed. `train --overwrite` moves the old run aside into
/// DIR/.previous/ and removes it only once the new run has its first
/// checkpoint; recover() puts it back when the new run died before that.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "run_names.h"
#include "magmadnn/model/params.h"
#include "report.h"
#include "test_curve.h"

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
  void write_test_curve(const TestCurve& curve) const;

  /// The files a run writes, checkpoint.bin first.
  static const std::vector<std::string>& run_files();
  /// Where --overwrite keeps the replaced run until the new one has a checkpoint.
  std::string previous_dir() const { return file(".previous"); }
  bool has_previous() const;
  /// Moves the run's files into DIR/.previous/ (through DIR/.previous.partial/,
  /// renamed when every file is there). Prints what it moved.
  void set_aside(std::ostream& out) const;
  /// Settles what a run that stopped in this folder left (see recover_run_folder).
  void recover(std::ostream& out) const;

 private:
  void write_atomic(const std::string& name, const std::string& text) const;
  std::string dir_;
};

/// When `dir` exists: an interrupted --overwrite is undone (DIR/.previous.partial/
/// moved back) or finished (DIR/.previous/ moved back when the new run has no
/// checkpoint.bin, removed when it has), and temporary files of writers that
/// were killed (.NAME.tmp.PID.N) are removed. Each action is printed to `out`.
void recover_run_folder(const std::string& dir, std::ostream& out);

/// For the message of a command that finds a file of the run folder `dir`
/// missing: when DIR/.previous/ (or DIR/.previous.partial/) holds the run a
/// `train --overwrite` is replacing (still running, or stopped before its
/// first checkpoint), a clause naming it, its checkpoint and how it comes
/// back, beginning with "; "; else "".
std::string previous_run_hint(const std::string& dir);

/// metrics.csv text of `history`, and its inverse.
std::string metrics_csv(const model::History& history);
model::History parse_metrics_csv(const std::string& text, const std::string& source);

/// The whole of the file `path` (IOError naming it when it cannot be read).
std::string read_text_file(const std::string& path);

}  // namespace magmadnn::cli
