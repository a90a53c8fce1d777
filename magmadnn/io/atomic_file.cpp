#include "magmadnn/io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "magmadnn/core/errors.h"

namespace magmadnn::io {
namespace fs = std::filesystem;

namespace {

struct FaultPlan {
  std::size_t after = 0;  // 0: no fault
  bool kill = false;
  std::size_t base = 0;  // steps already taken when the plan was set
};

std::mutex g_mutex;
std::size_t g_steps = 0;
bool g_env_read = false;
FaultPlan g_plan;

std::string errno_text() { return std::strerror(errno); }

void fsync_directory(const fs::path& dir, const std::string& target) {
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;  // the rename happened; only its durability is unconfirmed
  const int rc = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  // Some file systems do not support fsync on directories (EINVAL); the
  // rename itself is still atomic there.
  MAGMADNN_CHECK(rc == 0 || err == EINVAL, IOError,
                 "fsync of the directory of " << target << " failed: " << std::strerror(err));
}

}  // namespace

void write_step(const std::string& what) {
  std::size_t step = 0;
  FaultPlan plan;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_env_read) {
      g_env_read = true;
      if (const char* k = std::getenv("MAGMADNN_FAULT_AFTER_WRITES"); k != nullptr && g_plan.after == 0) {
        g_plan.after = std::strtoull(k, nullptr, 10);
        const char* kill = std::getenv("MAGMADNN_FAULT_KILL");
        g_plan.kill = kill != nullptr && std::strcmp(kill, "1") == 0;
        g_plan.base = g_steps;
      }
    }
    step = ++g_steps - g_plan.base;
    plan = g_plan;
  }
  if (plan.after == 0 || step != plan.after) return;
  if (plan.kill) {
    std::fprintf(stderr, "magmadnn: fault injected: killed at write step %zu (%s)\n", step, what.c_str());
    std::fflush(stderr);
    ::_exit(137);  // test hook only: as kill -9, nothing is cleaned up
  }
  throw IOError("write step " + std::to_string(step) + " (" + what +
                ") failed: simulated fault (MAGMADNN_FAULT_AFTER_WRITES)");
}

AtomicFile::AtomicFile(std::string target) : target_(std::move(target)) {
  static std::atomic<unsigned> counter{0};
  const fs::path t(target_);
  std::string name = ".";  // appended piece by piece: GCC 12 warns (-Wrestrict) about "." + string
  name += t.filename().string();
  name += ".tmp.";
  name += std::to_string(::getpid());
  name += '.';
  name += std::to_string(counter.fetch_add(1));
  temp_ = (t.parent_path() / name).string();
  write_step("writing " + target_);
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  MAGMADNN_CHECK(fd_ >= 0, IOError, "cannot create temporary file " << temp_ << " for " << target_ << ": "
                                                                     << errno_text());
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::write(const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t w = ::write(fd_, p + done, size - done);
    if (w < 0 && errno == EINTR) continue;
    MAGMADNN_CHECK(w > 0, IOError, "write to " << temp_ << " (for " << target_ << ") failed after " << done
                                               << " bytes: " << errno_text());
    done += static_cast<std::size_t>(w);
  }
}

void AtomicFile::commit() {
  MAGMADNN_CHECK(::fsync(fd_) == 0, IOError, "fsync of " << temp_ << " (for " << target_ << ") failed: "
                                                         << errno_text());
  const int fd = fd_;
  fd_ = -1;
  MAGMADNN_CHECK(::close(fd) == 0, IOError, "close of " << temp_ << " (for " << target_ << ") failed: "
                                                        << errno_text());
  write_step("renaming " + temp_ + " to " + target_);
  MAGMADNN_CHECK(::rename(temp_.c_str(), target_.c_str()) == 0, IOError,
                 "cannot rename " << temp_ << " to " << target_ << ": " << errno_text());
  committed_ = true;
  fsync_directory(fs::path(target_).parent_path(), target_);
}

void write_file_atomic(const std::string& path, std::string_view text) {
  AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

void rename_file(const std::string& from, const std::string& to) {
  write_step("moving " + from + " to " + to);
  MAGMADNN_CHECK(::rename(from.c_str(), to.c_str()) == 0, IOError,
                 "cannot move " << from << " to " << to << ": " << errno_text());
  fsync_directory(fs::path(to).parent_path(), to);
}

void remove_path(const std::string& path) {
  write_step("removing " + path);
  std::error_code ec;
  fs::remove_all(path, ec);
  MAGMADNN_CHECK(!ec, IOError, "cannot remove " << path << ": " << ec.message());
}

bool is_temp_file_name(const std::string& name, long* pid) {
  // .NAME.tmp.PID.N with a non-empty NAME and decimal PID and N
  if (name.size() < 9 || name[0] != '.') return false;
  const std::size_t last = name.rfind('.');
  if (last == std::string::npos || last + 1 == name.size()) return false;
  const std::size_t mid = name.rfind('.', last - 1);
  if (mid == std::string::npos || mid + 1 == last) return false;
  auto digits = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      if (name[i] < '0' || name[i] > '9') return false;
    }
    return true;
  };
  if (!digits(mid + 1, last) || !digits(last + 1, name.size())) return false;
  if (mid < 5 || name.compare(mid - 4, 4, ".tmp") != 0 || mid - 4 <= 1) return false;
  if (pid != nullptr) *pid = std::strtol(name.c_str() + mid + 1, nullptr, 10);
  return true;
}

TempCleanup remove_stale_temp_files(const std::string& dir) {
  TempCleanup c;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    long pid = 0;
    const std::string name = it->path().filename().string();
    if (!is_temp_file_name(name, &pid) || !it->is_regular_file()) continue;
    if (pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM)) continue;  // its writer still runs
    std::error_code size_ec;
    const std::uintmax_t bytes = fs::file_size(it->path(), size_ec);
    remove_path(it->path().string());
    ++c.files;
    c.bytes += size_ec ? 0 : bytes;
  }
  return c;
}

namespace detail {
void set_fault_after_writes(std::size_t k, bool kill) noexcept {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_env_read = true;
  g_plan = {k, kill, g_steps};
}
std::size_t write_steps() noexcept {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_steps;
}
}  // namespace detail

}  // namespace magmadnn::io
