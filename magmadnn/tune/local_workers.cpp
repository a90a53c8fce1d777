#include "magmadnn/tune/local_workers.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

#include "magmadnn/core/errors.h"
#include "magmadnn/tune/frame.h"

extern char** environ;

namespace magmadnn::tune {
namespace {

std::string how_it_ended(int status) {
  std::ostringstream os;
  if (WIFSIGNALED(status)) {
    const char* name = ::strsignal(WTERMSIG(status));
    os << "was killed by signal " << WTERMSIG(status) << " (" << (name ? name : "?") << ")";
  } else if (WIFEXITED(status)) {
    os << "exited with status " << WEXITSTATUS(status);
  } else {
    os << "ended (wait status " << status << ")";
  }
  return os.str();
}

}  // namespace

LocalWorkers::LocalWorkers(int n, std::vector<std::string> command) : command_(std::move(command)) {
  MAGMADNN_CHECK(n >= 1, ValueError, "LocalWorkers: " << n << " workers; need at least 1");
  MAGMADNN_CHECK(!command_.empty(), ValueError, "LocalWorkers: no command to start workers with");
  slots_.resize(static_cast<std::size_t>(n));
  spawns_left_ = 3 * n + 8;
  for (int w = 0; w < n; ++w) spawn(w);
}

LocalWorkers::~LocalWorkers() {
  try {
    shut_down();
  } catch (...) {
    // A destructor must not throw; shut_down only fails on a worker that is gone anyway.
  }
}

std::string LocalWorkers::describe(int worker) const {
  const Slot& s = slots_.at(static_cast<std::size_t>(worker));
  std::ostringstream os;
  os << "worker " << worker;
  if (s.pid > 0) os << " (pid " << s.pid << ")";
  return os.str();
}

void LocalWorkers::spawn(int worker) {
  MAGMADNN_CHECK(spawns_left_-- > 0, CommError,
                 "tune: too many worker processes were lost; not starting another (last slot: " << worker << ")");
  int sv[2];
  MAGMADNN_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, CommError,
                 "tune: socketpair for worker " << worker << " failed: " << std::strerror(errno));
  // Everything the child needs is built before fork: between fork and exec
  // only async-signal-safe calls are allowed.
  std::vector<std::string> env_strings;
  const std::string key = std::string(kWorkerFdVariable) + "=";
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, key.c_str(), key.size()) != 0) env_strings.emplace_back(*e);
  env_strings.push_back(key + std::to_string(sv[1]));
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = command_;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(sv[0]);
    ::close(sv[1]);
    MAGMADNN_THROW(CommError, "tune: fork for worker " << worker << " failed: " << std::strerror(err));
  }
  if (pid == 0) {
#if defined(__linux__)
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);  // the master died before prctl took effect
#endif
    ::fcntl(sv[1], F_SETFD, 0);  // this end survives exec; every other descriptor of ours is CLOEXEC
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);  // exec failed: the master sees the exit status
  }
  ::close(sv[1]);
  slots_[static_cast<std::size_t>(worker)] = {pid, sv[0]};
}

void LocalWorkers::send(int worker, const std::string& message) {
  const Slot& s = slots_.at(static_cast<std::size_t>(worker));
  if (s.fd < 0) return;
  try {
    write_frame(s.fd, message);
  } catch (const CommError&) {
    // The worker is gone; poll() reports the end of its stream and wait() the loss.
  }
}

std::string LocalWorkers::reap(int worker) {
  Slot& s = slots_[static_cast<std::size_t>(worker)];
  const std::string who = describe(worker);
  ::close(s.fd);
  s.fd = -1;
  int status = 0;
  pid_t r;
  do r = ::waitpid(s.pid, &status, 0);
  while (r < 0 && errno == EINTR);
  s.pid = -1;
  std::ostringstream os;
  os << who;
  if (r < 0) os << " is gone (waitpid: " << std::strerror(errno) << ")";
  else os << ' ' << how_it_ended(status);
  return os.str();
}

std::vector<ChannelEvent> LocalWorkers::wait() {
  std::vector<ChannelEvent> events;
  std::vector<pollfd> fds;
  std::vector<int> owner;
  for (std::size_t w = 0; w < slots_.size(); ++w)
    if (slots_[w].fd >= 0) {
      fds.push_back({slots_[w].fd, POLLIN, 0});
      owner.push_back(static_cast<int>(w));
    }
  MAGMADNN_CHECK(!fds.empty(), CommError, "tune: waiting for workers, but none is left");
  int n;
  do n = ::poll(fds.data(), fds.size(), -1);
  while (n < 0 && errno == EINTR);
  MAGMADNN_CHECK(n >= 0, CommError, "tune: poll on the workers failed: " << std::strerror(errno));
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    const int w = owner[i];
    // Every frame already here, not only the first: a round of outcomes then
    // shares one journal commit.
    for (bool ready = true; ready;) {
      std::optional<std::string> frame;
      std::string error;
      try {
        frame = read_frame(fds[i].fd);
      } catch (const CommError& e) {
        error = e.what();
      }
      if (!frame) {
        std::string why = reap(w);
        if (!error.empty()) why.append(" (").append(error).append(")");
        events.push_back({w, ChannelEvent::Kind::lost, std::move(why)});
        break;
      }
      events.push_back({w, ChannelEvent::Kind::message, std::move(*frame)});
      pollfd again{fds[i].fd, POLLIN, 0};
      ready = ::poll(&again, 1, 0) > 0 && again.revents != 0;
    }
  }
  return events;
}

bool LocalWorkers::replace(int worker) {
  if (spawns_left_ <= 0) return false;
  spawn(worker);
  return true;
}

void LocalWorkers::shut_down() {
  for (Slot& s : slots_) {
    if (s.fd < 0) continue;
    try {
      write_frame(s.fd, R"({"type":"stop"})");
    } catch (const CommError&) {
    }
    ::close(s.fd);  // a worker still in a trial sees the end of its stream afterwards
    s.fd = -1;
  }
  for (Slot& s : slots_) {
    if (s.pid <= 0) continue;
    // A worker ends at once when idle; give one busy in a trial a moment, then end it.
    int status = 0;
    for (int i = 0; i < 200 && ::waitpid(s.pid, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (::waitpid(s.pid, &status, WNOHANG) == 0) {
      ::kill(s.pid, SIGKILL);
      ::waitpid(s.pid, &status, 0);
    }
    s.pid = -1;
  }
}

FdWorkerChannel::~FdWorkerChannel() { ::close(fd_); }

std::optional<std::string> FdWorkerChannel::receive() {
  try {
    return read_frame(fd_);
  } catch (const CommError&) {
    return std::nullopt;  // the master died in the middle of a frame: it is gone all the same
  }
}

void FdWorkerChannel::send(const std::string& message) { write_frame(fd_, message); }

std::optional<int> worker_fd_from_environment() {
  const char* v = std::getenv(kWorkerFdVariable);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  const long fd = std::strtol(v, &end, 10);
  MAGMADNN_CHECK(end != v && *end == '\0' && fd >= 0 && fd < 1 << 20 && ::fcntl(static_cast<int>(fd), F_GETFD) >= 0,
                 ValueError, kWorkerFdVariable << "=" << v << " is not an open descriptor");
  ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);  // not passed on to what this worker may start
  return static_cast<int>(fd);
}

std::string self_executable() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  MAGMADNN_CHECK(!ec, IOError, "cannot find this program's path (/proc/self/exe): " << ec.message());
  return p.string();
}

}  // namespace magmadnn::tune
