#include "output_guard.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "args.h"
#include "run_folder.h"

namespace magmadnn::cli {
namespace {
namespace fs = std::filesystem;

bool present(const fs::path& p) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec)) && !ec;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The names a run writes and that no search writes.
const std::vector<std::string>& run_only_files() {
  static const std::vector<std::string> files = {"checkpoint.bin", "config.json",        "metrics.csv", "summary.json",
                                                 "test_per_epoch.csv", ".previous", ".previous.partial"};
  return files;
}

// Creates and removes a file beside `path`, so that a folder that cannot be
// written is found before the work, with the system's reason.
void probe_writable(const std::string& command, const std::string& flag, const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw UsageError(command + ": --" + flag + " " + path + " is a folder; give the name of a file to write");
  }
  const fs::path parent = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (!fs::is_directory(parent, ec)) {
    throw UsageError(command + ": --" + flag + " " + path + ": the folder " + parent.string() +
                     (present(parent) ? " is not a folder" : " does not exist"));
  }
  const fs::path probe = parent / (".magmadnn-probe.tmp." + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno != EEXIST) {
    throw UsageError(command + ": --" + flag + " " + path + " cannot be written: creating a file in " +
                     parent.string() + " fails: " + std::strerror(errno));
  }
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
  }
}

}  // namespace

const std::vector<std::string>& search_files() {
  static const std::vector<std::string> files = {"journal.jsonl", "results.json", "results.csv", "best.json",
                                                 "report.html"};
  return files;
}

FolderKind folder_kind(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return FolderKind::none;
  for (const auto& f : run_only_files())
    if (present(fs::path(dir) / f)) return FolderKind::run;
  for (const auto& f : search_files())
    if (f != "report.html" && present(fs::path(dir) / f)) return FolderKind::search;
  return FolderKind::none;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::equivalent(a, b, ec) && !ec) return true;
  const fs::path ca = fs::weakly_canonical(a, ec);
  if (ec) return false;
  const fs::path cb = fs::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

void check_output_file(const std::string& command, const std::string& flag, const std::string& path,
                       const std::vector<NamedInput>& inputs) {
  for (const NamedInput& in : inputs) {
    if (!in.path.empty() && same_file(path, in.path)) {
      throw UsageError(command + ": --" + flag + " " + path + " is the " +
                       (in.flag.rfind("--", 0) == 0 ? in.flag + " file " : in.flag + " ") + in.path +
                       "; writing there would replace it");
    }
  }
  const fs::path p(path);
  const std::string name = p.filename().string();
  const std::string dir = p.parent_path().empty() ? "." : p.parent_path().string();
  const FolderKind kind = folder_kind(dir);
  if (kind == FolderKind::run && contains(RunFolder::run_files(), name)) {
    throw UsageError(command + ": --" + flag + " " + path + " is the " + name + " of the training run in " + dir +
                     "; writing there would replace it: choose another file");
  }
  if (kind == FolderKind::search && contains(search_files(), name)) {
    throw UsageError(command + ": --" + flag + " " + path + " is the " + name + " of the search in " + dir +
                     "; writing there would replace it: choose another file");
  }
  probe_writable(command, flag, path);
}

void check_output_folder(const std::string& command, const std::string& dir, FolderKind wanted) {
  const FolderKind kind = folder_kind(dir);
  if (kind == FolderKind::none || kind == wanted) return;
  if (kind == FolderKind::run) {
    throw UsageError(command + ": --out " + dir +
                     " holds a training run (magmadnn train's files: config.json, checkpoint.bin, ...); a search "
                     "would replace its report.html: choose another folder");
  }
  throw UsageError(command + ": --out " + dir +
                   " holds a search (magmadnn tune's files: journal.jsonl, results.json, ...); a training run would "
                   "replace its report.html: choose another folder");
}

}  // namespace magmadnn::cli
