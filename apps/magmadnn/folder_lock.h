/// @file folder_lock.h
/// An advisory lock on a run folder (`train --out DIR`) or a search folder
/// (`tune --out DIR`), so that two processes never write one folder at once:
/// two trainings started together into one new folder, or two `tune --resume`
/// of one search, would otherwise both succeed and mix their files.
///
/// The lock is flock(2) on DIR/.lock, a file that holds the holder's process
/// id, host and command for the refusal to name. The kernel releases it when
/// the holder dies however it dies (SIGKILL included), so a stale DIR/.lock
/// never blocks anyone. The holder removes DIR/.lock when it lets go; a
/// process that locked a file another one was removing at that moment sees
/// that its file is no longer DIR/.lock and tries again.
///
/// Requires: DIR exists. Guarantees: at most one FolderLock per folder among
/// all processes of one machine (and of the machines of a file system whose
/// flock is coherent across clients, such as NFSv4 and Lustre with
/// flock enabled); the descriptor is close-on-exec, so child processes (tune's
/// local workers) never keep the lock alive.
#pragma once

#include <string>

namespace magmadnn::cli {

class FolderLock {
 public:
  /// Locks `dir` for `command` ("magmadnn train", ...). Throws UsageError
  /// naming the holder (its process id, host and command, as it wrote them)
  /// when another FolderLock holds it, IOError when DIR/.lock cannot be made.
  FolderLock(const std::string& dir, const std::string& command);
  FolderLock(FolderLock&& other) noexcept;
  FolderLock& operator=(FolderLock&&) = delete;
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  /// Removes DIR/.lock and releases the lock.
  ~FolderLock();

  /// DIR/.lock.
  const std::string& path() const noexcept { return path_; }

  /// The name of the lock file inside a locked folder.
  static constexpr const char* kFileName = ".lock";

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace magmadnn::cli
