/// @file local_workers.h
/// Worker processes on this machine (`magmadnn tune --workers N`): each is
/// the same program started again (fork + exec of `command`), connected to
/// the master by a socketpair whose end it finds in the environment variable
/// MAGMADNN_TUNE_WORKER_FD; frames as in frame.h.
///
/// Guarantees: a worker that dies (SIGKILL, a crash, an exit) is reported by
/// wait() as lost, once, with how it ended ("killed by signal 9 (Killed)"),
/// found by the end of its stream and waitpid; replace() starts a new one in
/// its slot (up to 3N + 8 starts in all, so a worker that cannot start does
/// not loop forever). On Linux a worker dies with the master (PR_SET_PDEATHSIG)
/// and otherwise ends when its stream ends. The destructor ends every worker
/// still running (shut_down, then SIGKILL to any that does not exit).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "magmadnn/tune/channel.h"

namespace magmadnn::tune {

/// The environment variable that makes a started program a worker.
inline constexpr const char* kWorkerFdVariable = "MAGMADNN_TUNE_WORKER_FD";

class LocalWorkers final : public MasterChannel {
 public:
  /// Starts `n` workers running `command` (command[0]: the program's path).
  LocalWorkers(int n, std::vector<std::string> command);
  ~LocalWorkers() override;
  LocalWorkers(const LocalWorkers&) = delete;
  LocalWorkers& operator=(const LocalWorkers&) = delete;

  int workers() const override { return static_cast<int>(slots_.size()); }
  std::string describe(int worker) const override;
  void send(int worker, const std::string& message) override;
  std::vector<ChannelEvent> wait() override;
  bool replace(int worker) override;
  void shut_down() override;

  /// The process id of worker `w` (-1 once lost).
  pid_t pid(int worker) const { return slots_.at(static_cast<std::size_t>(worker)).pid; }

 private:
  struct Slot {
    pid_t pid = -1;
    int fd = -1;
  };
  void spawn(int worker);
  std::string reap(int worker);  // closes, waits for the process, says how it ended

  std::vector<std::string> command_;
  std::vector<Slot> slots_;
  int spawns_left_ = 0;
};

/// The worker's end: frames on the inherited socket.
class FdWorkerChannel final : public WorkerChannel {
 public:
  explicit FdWorkerChannel(int fd) : fd_(fd) {}
  ~FdWorkerChannel() override;
  std::optional<std::string> receive() override;
  void send(const std::string& message) override;

 private:
  int fd_;
};

/// The socket MAGMADNN_TUNE_WORKER_FD names, when this process was started
/// as a worker (ValueError for a value that is not an open descriptor).
std::optional<int> worker_fd_from_environment();

/// This program's own path (/proc/self/exe), to start it again as a worker.
std::string self_executable();

}  // namespace magmadnn::tune
