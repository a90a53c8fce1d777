/// @file atomic_file.h
/// The one way magmadnn writes a file it must not lose: the bytes go to a
/// temporary file beside the target (DIR/.NAME.tmp.PID.N), which is fsynced,
/// renamed over the target and the directory fsynced. A reader therefore sees
/// the old complete file or the new complete one, never a mix. Checkpoints
/// (io::write_checkpoint) and the CLI's run folder (config.json, metrics.csv,
/// summary.json, report.html, and the moves that replace an old run) go
/// through here.
///
/// Fault injection (tests only): every file-system change made here is one
/// "write step" (creating a run folder or a temporary file, renaming a file into place,
/// moving or removing a file of a run). With MAGMADNN_FAULT_AFTER_WRITES=k in
/// the environment (read once, on the first step), the k-th step does not
/// happen: it throws an IOError naming the file, or, with MAGMADNN_FAULT_KILL=1,
/// the process ends at once with _exit(137) - no destructor, no clean-up, as
/// after `kill -9`. This hook is the only _exit in the project.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace magmadnn::io {

/// Counts one write step about to change `what` (see the file comment).
void write_step(const std::string& what);

/// A temporary file beside `target`, renamed over it by commit(). Removed by
/// the destructor when not committed.
class AtomicFile {
 public:
  explicit AtomicFile(std::string target);  // one write step: creating the temporary file
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  int fd() const noexcept { return fd_; }
  const std::string& temp_path() const noexcept { return temp_; }
  const std::string& target() const noexcept { return target_; }
  /// Writes all of `data` (retrying short writes); IOError naming the file on failure.
  void write(const void* data, std::size_t size);
  /// fsync, close, rename over the target (one write step), fsync the directory.
  void commit();

 private:
  std::string target_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Writes `text` to `path` through an AtomicFile.
void write_file_atomic(const std::string& path, std::string_view text);

/// Renames `from` to `to` (one write step); IOError naming both on failure.
void rename_file(const std::string& from, const std::string& to);
/// Removes `path` and what it holds (one write step).
void remove_path(const std::string& path);

/// True when `filename` (no directory) is an AtomicFile temporary file
/// (.NAME.tmp.PID.N); `pid` receives PID.
bool is_temp_file_name(const std::string& filename, long* pid = nullptr);

struct TempCleanup {
  std::size_t files = 0;
  std::uintmax_t bytes = 0;
};
/// Removes the temporary files that runs killed mid-write left in `dir` (only
/// names is_temp_file_name accepts, and none of a process still alive).
TempCleanup remove_stale_temp_files(const std::string& dir);

namespace detail {
/// Test hook: as MAGMADNN_FAULT_AFTER_WRITES=k (0: off) and MAGMADNN_FAULT_KILL,
/// counting from the next step; overrides the environment.
void set_fault_after_writes(std::size_t k, bool kill = false) noexcept;
/// Write steps taken so far in this process.
std::size_t write_steps() noexcept;
}  // namespace detail

}  // namespace magmadnn::io
