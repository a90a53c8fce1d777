/// @file channel.h
/// How the master and its workers talk, whatever carries the bytes: the
/// master loop (master.h) and the worker loop (worker.h) are written once
/// against these two interfaces, and each execution mode supplies its pair:
///  - one process: InlineChannel (inline_channel.h) runs each trial when the
///    master waits;
///  - local worker processes: LocalWorkers / FdWorkerChannel (local_workers.h),
///    length-prefixed frames over a socketpair per worker;
///  - under mpirun: CommMasterChannel / CommWorkerChannel (comm_channel.h),
///    point-to-point messages of a distributed::Communicator.
/// A message is one opaque string (the worker protocol's JSON, worker.h).
///
/// Requires: one thread drives a channel. Guarantees: a worker that goes
/// away (killed, crashed, exited) is reported by wait() as a `lost` event
/// with the reason, once, instead of a hang.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace magmadnn::tune {

struct ChannelEvent {
  enum class Kind { message, lost };
  int worker = 0;
  Kind kind = Kind::message;
  std::string payload;  ///< message: what the worker sent; lost: why it is gone
};

class MasterChannel {
 public:
  virtual ~MasterChannel() = default;
  /// The number of worker slots (ids 0 .. workers()-1).
  virtual int workers() const = 0;
  /// Words for worker `w` in messages ("worker 2 (pid 4711)", "ranks 3-5").
  virtual std::string describe(int worker) const = 0;
  /// Sends `message` to worker `w`. A worker already gone is not an error
  /// here: its loss comes out of wait().
  virtual void send(int worker, const std::string& message) = 0;
  /// Blocks until at least one event, and returns every event ready now.
  virtual std::vector<ChannelEvent> wait() = 0;
  /// Starts a new worker in lost slot `w`; false when this channel cannot.
  virtual bool replace(int worker) { return false; }
  /// Tells every live worker to end, and waits for them.
  virtual void shut_down() = 0;
};

class WorkerChannel {
 public:
  virtual ~WorkerChannel() = default;
  /// The next message from the master; nullopt once the master is gone.
  virtual std::optional<std::string> receive() = 0;
  virtual void send(const std::string& message) = 0;
};

}  // namespace magmadnn::tune
