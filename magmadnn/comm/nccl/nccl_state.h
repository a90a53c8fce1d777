/// @file nccl_state.h
/// What an NcclCommunicator and its requests share: the NCCL communicator,
/// the stream, the barrier's scratch word, the MPI side of the collective
/// check, and whether the communicator is still usable. Private to
/// comm/nccl/.
///
/// The NCCL communicator is non-blocking (ncclConfig_t::blocking = 0): no
/// NCCL call can block the host for ever. A call that answers ncclInProgress
/// is settled by polling ncclCommGetAsyncError against a deadline, so a
/// rank that never joins, or a connection that never forms, ends in the
/// watchdog's CommError rather than a silent hang.
///
/// The collective check reuses MpiCommunicator's machinery on a duplicate
/// of the MPI communicator (mpi/collective_check.h, mpi/mpi_request.h):
/// each collective's descriptor goes to every other rank, which names the
/// ranks that have not reached it and catches a mismatch; a rank that fails
/// sends a notice, so the others stop waiting and report too.
#pragma once

#include <nccl.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/backend/cuda/cuda_context.h"
#include "magmadnn/comm/mpi/collective_check.h"
#include "magmadnn/comm/mpi/mpi_request.h"
#include "magmadnn/comm/nccl/nccl_communicator.h"

namespace magmadnn::distributed {

namespace nccl_detail {

using Clock = std::chrono::steady_clock;

/// One operation as the watchdog and error messages quote it.
struct OpInfo {
  std::string what;  // "allreduce(1024 x float32, sum)"
  std::size_t bytes = 0;
  std::int64_t step = -1;
  std::chrono::milliseconds timeout{0};
};

/// The completion of one launched group of NCCL calls: a CUDA event
/// recorded after it, shared by the requests of the group. Null until the
/// group is launched (sends and receives wait in State::pending_p2p).
struct Launch {
  std::shared_ptr<CUevent_st> event;
};

/// A send or receive queued until the next flush (State::flush_p2p).
struct PendingP2p {
  bool send = true;
  const void* send_buf = nullptr;  // set for a send
  void* recv_buf = nullptr;        // set for a receive
  std::size_t count = 0;
  dtype type = dtype::f32;
  int peer = 0;
  OpInfo op;
  std::shared_ptr<Launch> launch;
};

using Enqueue = std::function<void(ncclComm_t, cudaStream_t)>;

/// Sleeps a little longer on each call, from a few microseconds up to a
/// millisecond: a short collective is noticed at once, a long one costs
/// little host time.
class Backoff {
 public:
  void pause();

 private:
  int rounds_ = 0;
};

}  // namespace nccl_detail

struct NcclCommunicator::State {
  int rank = 0;
  int size = 1;
  int device = 0;
  ncclComm_t comm = nullptr;  // owned: finalised and destroyed, or aborted, by ~State
  cuda::UniqueStream stream;
  cuda::UniqueDeviceMemory scratch;                  // one int for barrier()
  std::string broken;                                // why the communicator is unusable; empty while it works
  std::vector<nccl_detail::PendingP2p> pending_p2p;  // issued, not yet launched, in issue order
  // The collective check's MPI side (descriptors, failure notices); null
  // when Options::check_collectives is off.
  std::shared_ptr<mpi_detail::CommState> mpi;

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  /// Waits (bounded by `drain_timeout`) for queued work, then finalises and
  /// destroys the communicator; aborts it instead when the wait runs out.
  ~State();
  std::chrono::milliseconds drain_timeout{60000};

  /// Queues `calls` as one NCCL group on the stream after the CUDA
  /// backend's queued work has finished (host wait), settles the launch
  /// (bounded by `deadline`) and returns the event recorded after it.
  /// Any failure aborts the communicator.
  std::shared_ptr<CUevent_st> enqueue(const nccl_detail::OpInfo& op, nccl_detail::Clock::time_point deadline,
                                      const nccl_detail::Enqueue& calls,
                                      mpi_detail::DescriptorExchange* check = nullptr);
  /// Launches every pending send and receive as one group, so that sends
  /// and receives two ranks issue to each other in any order pair up
  /// (in separate launches on one stream each would wait for the other).
  void flush_p2p();

  /// Throws CommError when an earlier failure (here, or a notice from
  /// another rank) broke the communicator.
  void ensure_usable(const nccl_detail::OpInfo& op);
  /// Polls until the communicator leaves ncclInProgress, progressing
  /// `check` meanwhile; an error, a mismatch, another rank's notice or the
  /// deadline fails the communicator and throws CommError naming `op` and
  /// `phase`.
  void settle(const nccl_detail::OpInfo& op, const char* phase, nccl_detail::Clock::time_point deadline,
              mpi_detail::DescriptorExchange* check = nullptr);
  /// Throws (after failing the communicator) if NCCL has reported an
  /// asynchronous error, or another rank a failure.
  void check_async(const nccl_detail::OpInfo& op);
  /// Progresses `check`; true once every descriptor has arrived. A
  /// mismatch fails the communicator and throws CommError naming both views.
  bool progress(mpi_detail::DescriptorExchange& check);
  /// Records the first failure, aborts the NCCL communicator (its kernels
  /// end) and, unless `heard` (learnt from another rank's notice), tells the
  /// other ranks. Returns `message` for the caller to throw.
  std::string fail(const std::string& message, bool heard = false) noexcept;
  /// "rank 1 has not reached it", or why no rank can be named.
  static std::string missing_view(const mpi_detail::DescriptorExchange* check);
  /// Aborts the NCCL communicator and records why, telling nobody.
  void abort(const std::string& why) noexcept;
};

}  // namespace magmadnn::distributed
