#include "magmadnn/tune/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "magmadnn/core/errors.h"

namespace magmadnn::tune {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

Journal::Journal(std::string path) : path_(std::move(path)) {
  // A crash in the middle of a write leaves a last line without its newline:
  // cut it off, so the next line starts on a line of its own.
  const bool created = !std::filesystem::exists(path_);
  const std::string text = read_all(path_);
  const std::size_t whole = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  MAGMADNN_CHECK(fd_ >= 0, IOError, "cannot open the journal " << path_ << ": " << std::strerror(errno));
  if (whole != text.size()) {
    MAGMADNN_CHECK(::ftruncate(fd_, static_cast<off_t>(whole)) == 0, IOError,
                   "cannot cut the torn last line of " << path_ << ": " << std::strerror(errno));
  }
  MAGMADNN_CHECK(::lseek(fd_, 0, SEEK_END) >= 0, IOError, "cannot seek in " << path_ << ": " << std::strerror(errno));
  if (created) {
    // The new file's name must be as durable as the lines fsynced into it.
    const std::filesystem::path dir = std::filesystem::path(path_).parent_path();
    const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);  // some file systems refuse fsync on a directory; the file itself is still fsynced
      ::close(dfd);
    }
  }
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(const Json& event) {
  buffer_ += event.dump();
  buffer_ += '\n';
  ++pending_;
}

void Journal::commit() {
  if (buffer_.empty()) return;
  const char* p = buffer_.data();
  std::size_t left = buffer_.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    MAGMADNN_CHECK(n > 0, IOError, "cannot write the journal " << path_ << ": " << std::strerror(errno));
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  MAGMADNN_CHECK(::fsync(fd_) == 0, IOError, "cannot fsync the journal " << path_ << ": " << std::strerror(errno));
  buffer_.clear();
  committed_ += pending_;
  pending_ = 0;
}

std::vector<Json> read_journal(const std::string& path) {
  const std::string text = read_all(path);
  std::vector<Json> events;
  std::size_t start = 0, line = 1;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1, ++line) {
    if (nl == start) continue;
    try {
      events.push_back(Json::parse(text.begin() + static_cast<std::ptrdiff_t>(start),
                                   text.begin() + static_cast<std::ptrdiff_t>(nl)));
    } catch (const Json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
      MAGMADNN_THROW(ValueError, path << ":" << line << ": not a journal line (" << e.what() << ")");
    }
  }
  return events;
}

}  // namespace magmadnn::tune
