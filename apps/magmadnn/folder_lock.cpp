#include "folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

#include "args.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::cli {
namespace {
namespace fs = std::filesystem;

std::string host_name() {
  char h[256] = {};
  if (::gethostname(h, sizeof h - 1) != 0) return "?";
  return h;
}

std::string now_text() {
  const std::time_t t = std::time(nullptr);
  char s[40];
  std::strftime(s, sizeof s, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return s;
}

// What the holder wrote into its lock file (one line), or "" before it has.
std::string read_holder(int fd) {
  char buf[512];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string s(buf, static_cast<std::size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

bool same_inode(int fd, const std::string& path) {
  struct stat a {}, b {};
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

[[noreturn]] void refuse_busy(int fd, const std::string& dir, const std::string& command) {
  // The holder writes its line right after locking: give it a moment.
  std::string holder = read_holder(fd);
  for (int i = 0; i < 20 && holder.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    holder = read_holder(fd);
  }
  ::close(fd);
  throw UsageError(command + ": " + dir + " is in use by " +
                   (holder.empty() ? std::string("another process (it has not yet written who it is)") : holder) +
                   "; two processes must not write one folder: wait for that one to end (or stop it), or "
                   "choose another --out");
}

}  // namespace

FolderLock::FolderLock(const std::string& dir, const std::string& command)
    : path_((fs::path(dir) / kFileName).string()) {
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 && errno == ENOENT && attempt < 100) {
      // The folder was removed meanwhile (a refused run cleaning up the folder it made).
      std::error_code ec;
      fs::create_directories(dir, ec);
      continue;
    }
    MAGMADNN_CHECK(fd >= 0, IOError, "cannot create the lock file " << path_ << ": " << std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int e = errno;
      if (e == EWOULDBLOCK) refuse_busy(fd, dir, command);
      ::close(fd);
      MAGMADNN_THROW(IOError, "cannot lock " << path_ << ": " << std::strerror(e));
    }
    // The previous holder may have removed the file between our open and our
    // flock: then we hold a lock on a file nobody else will ever open.
    if (same_inode(fd, path_)) {
      fd_ = fd;
      break;
    }
    ::close(fd);
    MAGMADNN_CHECK(attempt < 100, IOError, "cannot lock " << path_ << ": it is replaced faster than it can be locked");
  }
  const std::string who = "process " + std::to_string(::getpid()) + " on host " + host_name() + " (" + command +
                          ", since " + now_text() + ")\n";
  // Best effort: the lock holds without the line, the refusal is only less precise.
  if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, who.data(), who.size(), 0) < 0) {
  }
}

FolderLock::FolderLock(FolderLock&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }

FolderLock::~FolderLock() {
  if (fd_ < 0) return;
  // Unlinked while still locked, so that nobody locks the file we are leaving
  // without seeing (same_inode) that it is gone.
  ::unlink(path_.c_str());
  ::close(fd_);
}

}  // namespace magmadnn::cli
