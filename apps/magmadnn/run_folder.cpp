#include "run_folder.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "csv_rows.h"
#include "magmadnn/io/atomic_file.h"

namespace magmadnn::cli {
namespace fs = std::filesystem;

namespace {

const char* kMetricsHeader =
    "epoch,train_loss,train_accuracy,val_loss,val_accuracy,learning_rate,seconds,samples_per_second";

std::string num(double v) {
  if (std::isnan(v)) return "";  // no validation: an empty field, as spreadsheets expect
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  MAGMADNN_CHECK(in.good(), IOError, "cannot read " << path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

RunFolder::RunFolder(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  // A new folder is a change on disk like any file of the run, so the fault
  // switch can stop a run there too.
  if (!fs::exists(dir_, ec)) io::write_step("creating run folder " + dir_);
  fs::create_directories(dir_, ec);
  MAGMADNN_CHECK(!ec && fs::is_directory(dir_), IOError,
                 "cannot create run folder " << dir_ << (ec ? ": " + ec.message() : std::string()));
}

std::string RunFolder::file(const std::string& name) const { return (fs::path(dir_) / name).string(); }

bool RunFolder::has_checkpoint() const { return fs::exists(checkpoint_path()); }

void RunFolder::write_atomic(const std::string& name, const std::string& text) const {
  io::write_file_atomic(file(name), text);
}

const std::vector<std::string>& RunFolder::run_files() {
  static const std::vector<std::string> files = {"checkpoint.bin", "config.json", "metrics.csv", "summary.json",
                                                 "report.html", "test_per_epoch.csv"};
  return files;
}

bool RunFolder::has_previous() const { return fs::exists(previous_dir()); }

void RunFolder::set_aside(std::ostream& out) const {
  const std::string partial = previous_dir() + ".partial";
  std::error_code ec;
  io::write_step("creating " + partial);
  fs::create_directory(partial, ec);
  MAGMADNN_CHECK(!ec, IOError, "cannot create " << partial << ": " << ec.message());
  std::string moved;
  for (const auto& f : run_files()) {
    if (!fs::exists(file(f))) continue;
    io::rename_file(file(f), (fs::path(partial) / f).string());
    moved += (moved.empty() ? "" : ", ") + f;
  }
  io::rename_file(partial, previous_dir());
  out << "magmadnn train: --overwrite: the old run (" << moved << ") is kept in " << previous_dir()
      << " until the new run writes its first checkpoint" << std::endl;
}

namespace {

// Moves every file of `from` back into `dir` (replacing) and removes `from`.
void move_back(const std::string& from, const std::string& dir) {
  for (const auto& f : RunFolder::run_files()) {
    const fs::path src = fs::path(from) / f;
    if (fs::exists(src)) io::rename_file(src.string(), (fs::path(dir) / f).string());
  }
  io::remove_path(from);
}

}  // namespace

void RunFolder::recover(std::ostream& out) const {
  const std::string partial = previous_dir() + ".partial";
  if (has_previous() && has_checkpoint()) {
    // .previous/ is complete only once every file of the old run is in it, so
    // this checkpoint.bin is the new run's: the replacement had succeeded.
    io::remove_path(previous_dir());
    out << "magmadnn train: " << dir_ << ": removed " << previous_dir() << " (the run that replaced it had written "
        << checkpoint_path() << ")" << std::endl;
  } else if (has_previous()) {
    // The new run stopped before its first checkpoint: drop what it wrote,
    // then move the old run back (through .previous.partial/, so that a stop
    // in between resumes the moving back, never removes a restored file).
    for (const auto& f : run_files()) {
      if (fs::exists(file(f))) io::remove_path(file(f));
    }
    io::rename_file(previous_dir(), partial);
    move_back(partial, dir_);
    out << "magmadnn train: " << dir_ << ": the run started with --overwrite stopped before its first checkpoint; "
        << "restored the previous run from " << previous_dir() << std::endl;
  } else if (fs::exists(partial)) {
    // Stopped while moving the old run aside (or back): nothing new was written.
    move_back(partial, dir_);
    out << "magmadnn train: " << dir_ << ": an --overwrite was interrupted while moving the old run; restored it from "
        << partial << std::endl;
  }
  const io::TempCleanup c = io::remove_stale_temp_files(dir_);
  if (c.files > 0) {
    out << "magmadnn train: " << dir_ << ": removed " << c.files << " temporary file" << (c.files == 1 ? "" : "s")
        << " (.NAME.tmp.PID.N, " << c.bytes << " bytes) left by a run that was killed while writing" << std::endl;
  }
}

void recover_run_folder(const std::string& dir, std::ostream& out) {
  if (!fs::is_directory(dir)) return;
  RunFolder(dir).recover(out);
}

std::string previous_run_hint(const std::string& dir) {
  std::error_code ec;
  const fs::path prev = fs::path(dir) / ".previous", partial = fs::path(dir) / ".previous.partial";
  if (fs::is_directory(prev, ec)) {
    return "; " + prev.string() + "/ holds the run that a `magmadnn train --overwrite` into " + dir +
           " is replacing (that run is still training, or stopped before its first checkpoint): its checkpoint is " +
           (prev / "checkpoint.bin").string() + ", and the next `magmadnn train --out " + dir +
           "` (--resume included) moves it back unless the new run is still training";
  }
  if (fs::is_directory(partial, ec)) {
    return "; " + partial.string() + "/ holds files of the run that a `magmadnn train --overwrite` into " + dir +
           " was moving aside when it stopped: the next `magmadnn train --out " + dir + "` moves them back";
  }
  return "";
}

void RunFolder::write_config(const Json& config) const { write_atomic("config.json", config.dump(2) + "\n"); }

Json RunFolder::read_config() const { return read_json_file(file("config.json")); }

void RunFolder::write_metrics(const model::History& history) const {
  write_atomic("metrics.csv", metrics_csv(history));
}

model::History RunFolder::read_metrics() const {
  const std::string path = file("metrics.csv");
  if (!fs::exists(path)) return {};
  return parse_metrics_csv(read_text_file(path), path);
}

void RunFolder::write_summary(const Json& summary) const { write_atomic("summary.json", summary.dump(2) + "\n"); }

Json RunFolder::read_summary() const { return read_json_file(file("summary.json")); }

void RunFolder::write_report(const ReportInput& in) const { write_atomic("report.html", render_report(in)); }

void RunFolder::write_test_curve(const TestCurve& curve) const {
  write_atomic("test_per_epoch.csv", test_curve_csv(curve));
}

std::string metrics_csv(const model::History& history) {
  std::string s = std::string(kMetricsHeader) + "\n";
  for (const auto& r : history) {
    s += std::to_string(r.epoch) + ',' + num(r.train_loss) + ',' + num(r.train_accuracy) + ',' + num(r.val_loss) +
         ',' + num(r.val_accuracy) + ',' + num(r.learning_rate) + ',' + num(r.seconds) + ',' +
         num(r.samples_per_second) + '\n';
  }
  return s;
}

model::History parse_metrics_csv(const std::string& text, const std::string& source) {
  model::History h;
  for (const CsvRow& row : csv_rows(text, source, kMetricsHeader)) {
    MAGMADNN_CHECK(row.cells.size() == 8, IOError,
                   source << ":" << row.lineno << ": expected 8 fields, got " << row.cells.size() << " in \""
                          << row.line << "\"");
    auto value = [&](std::size_t i) { return csv_number(row, i, source, /*empty_is_nan=*/true); };
    model::EpochRecord r;
    // Checked before the cast: a cast of NaN (an empty field), a negative
    // or a huge value to unsigned is undefined (seen while writing tests/fuzz's
    // compare target).
    const double epoch = value(0);
    MAGMADNN_CHECK(epoch >= 1 && epoch <= 1e6 && epoch == static_cast<double>(static_cast<unsigned>(epoch)), IOError,
                   source << ":" << row.lineno << ": epoch \"" << row.cells[0] << "\" is not a positive integer");
    r.epoch = static_cast<unsigned>(epoch);
    r.train_loss = value(1);
    r.train_accuracy = value(2);
    r.val_loss = value(3);
    r.val_accuracy = value(4);
    r.learning_rate = value(5);
    r.seconds = value(6);
    r.samples_per_second = value(7);
    h.push_back(r);
  }
  return h;
}

}  // namespace magmadnn::cli
