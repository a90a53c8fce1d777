/// @file communicator.h
/// distributed::Communicator: the one interface every distributed part of
/// magmadnn talks through (data-parallel strategies, the training run, the
/// search's master/worker runner, dMath). Three implementations, chosen at
/// run time (communicator_factory.h):
///  - LocalCommunicator (local_communicator.h): one process, rank 0 of 1; no
///    MPI needed, so everything works where MPI is absent;
///  - MpiCommunicator (mpi/): host buffers, and device buffers through
///    CUDA-aware MPI where present, else staged through pinned host memory;
///  - NcclCommunicator (nccl/): device buffers; the unique id goes over MPI.
/// Layers, model and graph never include mpi/ or nccl/ headers: they see
/// only this interface.
///
/// Buffers are untyped (pointer, element count, dtype) so the same calls
/// carry float, double, half and bfloat16 (and int32/int64 for metadata);
/// `Place` says whether a pointer is host or device memory.
///
/// Requires: every rank calls the same collectives in the same order, with
/// the same count, dtype and root. Guarantees:
///  - a mismatch in a collective's operation, count or dtype between ranks
///    is detected and raised as CommError naming both ranks' views;
///  - no silent hang: a rank that does not reach a collective (or a
///    point-to-point partner that never answers) within timeout() makes
///    wait() throw CommError naming the step, the operation, the byte count
///    and the ranks that are missing (see set_step());
///  - completion order: requests complete in any order; wait() on each is
///    required before its buffers are reused (RAII: a Request destroyed
///    while pending waits for it, swallowing nothing: errors are logged).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/core/errors.h"
#include "magmadnn/core/types.h"

namespace magmadnn::distributed {

/// Reduction applied by allreduce / reduce_scatter / reduce.
enum class ReduceOp : std::uint8_t { sum = 0, avg = 1, max = 2, min = 3 };
const char* reduce_op_name(ReduceOp op) noexcept;

/// Where a buffer lives.
enum class Place : std::uint8_t { host = 0, device = 1 };

/// A contiguous buffer: `count` elements of `type` at `data`.
struct Buffer {
  void* data = nullptr;
  std::size_t count = 0;
  dtype type = dtype::f32;
  Place place = Place::host;
  std::size_t bytes() const noexcept { return count * dtype_size(type); }
};
/// A read-only buffer (send sides).
struct ConstBuffer {
  const void* data = nullptr;
  std::size_t count = 0;
  dtype type = dtype::f32;
  Place place = Place::host;
  std::size_t bytes() const noexcept { return count * dtype_size(type); }
};

/// A handle to a non-blocking operation.
class Request {
 public:
  virtual ~Request() = default;
  /// Drives progress once; true when the operation has completed (then
  /// wait() returns at once). Throws CommError on failure.
  virtual bool test() = 0;
  /// Blocks until the operation completes; throws CommError on failure or
  /// when the communicator's timeout passes (naming the missing ranks).
  virtual void wait() = 0;
  /// Abandons a pending receive whose sender may never send (a rank that
  /// died): afterwards its buffer is not written and destroying the request
  /// does not wait. True when it was cancelled or had completed; false for
  /// an operation that cannot be cancelled (a send, a collective: the
  /// default), which then stays pending as before.
  virtual bool cancel() noexcept { return false; }
};
using RequestPtr = std::unique_ptr<Request>;

/// Waits for every request in order (nullptr entries are skipped).
void wait_all(std::vector<RequestPtr>& requests);

class Communicator {
 public:
  virtual ~Communicator() = default;

  /// This process's rank in [0, size()).
  virtual int rank() const noexcept = 0;
  /// The number of ranks.
  virtual int size() const noexcept = 0;
  /// "local", "mpi" or "nccl".
  virtual std::string backend() const = 0;
  /// Whether Place::device buffers are accepted (NCCL always; MPI with a
  /// CUDA build, directly when CUDA-aware, else staged).
  virtual bool supports(Place place) const noexcept = 0;

  // -- non-blocking collectives (in place where it makes sense) -------------
  /// Reduces `buf` over all ranks, result in every rank's `buf`.
  virtual RequestPtr iallreduce(Buffer buf, ReduceOp op) = 0;
  /// Copies root's `buf` into every rank's `buf`.
  virtual RequestPtr ibroadcast(Buffer buf, int root) = 0;
  /// Reduces `send` (size() * recv.count elements) over ranks; rank r
  /// receives block r into `recv`.
  virtual RequestPtr ireduce_scatter(ConstBuffer send, Buffer recv, ReduceOp op) = 0;
  /// Every rank's `send` (send.count each) concatenated in rank order into
  /// every rank's `recv` (size() * send.count elements).
  virtual RequestPtr iallgather(ConstBuffer send, Buffer recv) = 0;
  /// As allgather, but only root's `recv` is written (others may pass an
  /// empty Buffer).
  virtual RequestPtr igather(ConstBuffer send, Buffer recv, int root) = 0;
  /// Root's `send` (size() * recv.count elements) split in rank order; rank r
  /// receives block r (others may pass an empty `send`).
  virtual RequestPtr iscatter(ConstBuffer send, Buffer recv, int root) = 0;
  /// Reduces `buf` over all ranks into root's `buf` (others' unchanged).
  virtual RequestPtr ireduce(Buffer buf, ReduceOp op, int root) = 0;

  // -- point to point ------------------------------------------------------
  virtual RequestPtr isend(ConstBuffer buf, int dest, int tag) = 0;
  virtual RequestPtr irecv(Buffer buf, int source, int tag) = 0;

  /// All ranks meet (bounded by timeout()).
  virtual void barrier() = 0;

  // -- blocking forms: the non-blocking call then wait() ----------------------
  void allreduce(Buffer buf, ReduceOp op) { iallreduce(buf, op)->wait(); }
  void broadcast(Buffer buf, int root) { ibroadcast(buf, root)->wait(); }
  void reduce_scatter(ConstBuffer send, Buffer recv, ReduceOp op) { ireduce_scatter(send, recv, op)->wait(); }
  void allgather(ConstBuffer send, Buffer recv) { iallgather(send, recv)->wait(); }
  void gather(ConstBuffer send, Buffer recv, int root) { igather(send, recv, root)->wait(); }
  void scatter(ConstBuffer send, Buffer recv, int root) { iscatter(send, recv, root)->wait(); }
  void reduce(Buffer buf, ReduceOp op, int root) { ireduce(buf, op, root)->wait(); }
  void send(ConstBuffer buf, int dest, int tag) { isend(buf, dest, tag)->wait(); }
  void recv(Buffer buf, int source, int tag) { irecv(buf, source, tag)->wait(); }

  /// Tells the other ranks that this rank stops, for `reason` (an error
  /// outside the communication layer: a callback that threw, a NaN loss, a
  /// failed write), so that a rank waiting for it in a collective stops at
  /// once and quotes the reason, instead of waiting for its watchdog and
  /// then naming only a timeout. Call it before leaving the training loop
  /// with that error. Guarantees: never blocks, never throws; a failure
  /// already recorded (here, or heard from another rank) wins and nothing
  /// is sent; afterwards every call on this communicator throws CommError.
  /// The default does nothing (one process, or no channel for notices).
  virtual void report_failure(const std::string& reason) noexcept { (void)reason; }

  // -- the watchdog -----------------------------------------------------------
  /// How long wait() lets a collective or a partner stay missing (60 s by default).
  void set_timeout(std::chrono::milliseconds t) noexcept { timeout_ = t; }
  std::chrono::milliseconds timeout() const noexcept { return timeout_; }
  /// The training step in progress, quoted by watchdog and mismatch messages.
  void set_step(std::int64_t step) noexcept { step_ = step; }
  std::int64_t step() const noexcept { return step_; }

 protected:
  std::chrono::milliseconds timeout_{60000};
  std::int64_t step_ = -1;
};

/// Typed views of host memory, for the common case.
template <typename T>
Buffer host_buffer(T* data, std::size_t count) {
  return {data, count, dtype_v<T>, Place::host};
}
template <typename T>
ConstBuffer host_buffer(const T* data, std::size_t count) {
  return {data, count, dtype_v<T>, Place::host};
}

}  // namespace magmadnn::distributed
