/// @file nccl_communicator.h
/// NcclCommunicator: the Communicator over NCCL, for GPU buffers.
///
/// One NCCL rank per MPI rank: rank 0 of the given MPI communicator creates
/// the NCCL unique id and MPI hands it to the others, then every rank joins
/// with ncclCommInitRankConfig on its device. The communicator owns a
/// non-blocking NCCL communicator, a CUDA stream every operation is queued
/// on, one CUDA event per launch, recorded right after it (the Request:
/// test() queries the event, wait() polls it), and a duplicate of the MPI
/// communicator for the collective check (Options::check_collectives).
///
/// Operations: allreduce, broadcast, reduce, reduce-scatter and allgather
/// are NCCL collectives; send and recv are ncclSend/ncclRecv; gather and
/// scatter are one group of sends and receives (the root's own block is a
/// device copy); barrier is a one-element allreduce followed by a wait.
/// Dtypes: f32, f64, f16 (ncclHalf), bf16 (ncclBfloat16), i32, i64;
/// ReduceOp::avg is ncclAvg (for integers NCCL's average truncates).
///
/// Requires:
///  - a CUDA build with NCCL and MPI (this folder is compiled only then).
///    MPI is initialised by the constructor if the program has not done it
///    (MpiEnvironment, mpi/mpi_environment.h, whose threading rules apply:
///    the collective check calls MPI from the thread that drives this
///    communicator);
///  - one GPU per rank. The device is `Options::device`, or by default
///    local rank % device count (ranks sharing a node take different GPUs);
///    the caller's current device is left unchanged. NCCL up to 2.29
///    refuses two ranks of one communicator on one GPU ("Duplicate GPU
///    detected", see docs/gpu.md);
///  - Place::device buffers (device or managed memory of that GPU); host
///    buffers raise NotSupportedError naming the MPI communicator as the
///    alternative;
///  - the contract of communicator.h: every rank issues the same
///    collectives in the same order. Point-to-point messages between two
///    ranks are matched in issue order: NCCL has no tags, so `tag` is only
///    checked to be non-negative. isend and irecv are queued and launched
///    together, as one NCCL group, at the first test() or wait() of any of
///    them or before the next collective: so two ranks may each send first
///    and receive second, as with MPI (launched one at a time on one
///    stream, each send would wait for a receive queued behind the peer's
///    send). A send or receive to oneself raises ValueError;
///  - inputs complete on the device when an operation is called: each call
///    first waits for the work the CUDA backend has queued on this device
///    (Backend::synchronize), since the backend does not export its stream.
///
/// Guarantees:
///  - results are visible to any later work (backend kernels, copies) once
///    wait() has returned or test() has returned true;
///  - with the collective check (the default), a mismatch between ranks in
///    a collective's operation, count, dtype, root or reduction, or in the
///    order of collectives, raises CommError naming both ranks' views, on
///    both ranks. Sends and receives are not checked (NCCL carries no
///    header): a count that differs from its peer's is undefined behaviour;
///  - the watchdog: wait() polls the operation's event, NCCL's asynchronous
///    error state, the descriptor exchange and the other ranks' failure
///    notices. Once timeout() (as it was at the call) has passed since
///    wait() was entered, the NCCL communicator is aborted (ncclCommAbort,
///    which also ends the operation's kernels), the other ranks are told,
///    and CommError names the step, the operation, its byte count and, for
///    a collective with the check on, the ranks that have not reached it
///    (NCCL itself cannot tell; without the check, or for a send or
///    receive, the message says so). Ranks told of a failure throw
///    CommError quoting it at their next call. Joining and each launch are
///    bounded by the same timeout;
///  - after any failure every later call throws CommError quoting the first
///    one: NCCL communicators cannot be repaired. Make a new NcclCommunicator;
///  - RAII: the NCCL communicator, stream, events, scratch memory and MPI
///    duplicate are released by the destructor, which first waits (bounded
///    by timeout()) for operations still in flight. Requests may outlive
///    the communicator.
///
/// Thread safety: one thread at a time drives a communicator and its
/// requests.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "magmadnn/comm/communicator.h"

namespace magmadnn::distributed {

class NcclCommunicator final : public Communicator {
 public:
  struct Options {
    /// CUDA device of this rank; -1: local rank % number of devices.
    int device = -1;
    /// Bounds joining and each operation (Communicator::timeout()).
    std::chrono::milliseconds timeout{60000};
    /// The collective check over MPI: each collective's descriptor
    /// (operation, count, dtype, root, reduction) goes to every other rank,
    /// 2 (size - 1) messages of 40 bytes posted with the collective. It
    /// detects mismatches and lets the watchdog name the missing ranks; off,
    /// neither is possible (NCCL sees neither).
    bool check_collectives = true;
  };

  /// Joins all ranks of `mpi_comm` (collective over it). Throws DeviceError
  /// when no GPU is usable, CommError when NCCL or MPI fails or a rank does
  /// not join within the timeout.
  explicit NcclCommunicator(MPI_Comm mpi_comm = MPI_COMM_WORLD);
  NcclCommunicator(MPI_Comm mpi_comm, const Options& options);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const noexcept override;
  int size() const noexcept override;
  std::string backend() const override { return "nccl"; }
  bool supports(Place place) const noexcept override { return place == Place::device; }

  /// The CUDA device this rank communicates on.
  int device() const noexcept;
  /// NCCL's version code of the loaded library (e.g. 22809 for 2.28.9).
  static int library_version();

  RequestPtr iallreduce(Buffer buf, ReduceOp op) override;
  RequestPtr ibroadcast(Buffer buf, int root) override;
  RequestPtr ireduce_scatter(ConstBuffer send, Buffer recv, ReduceOp op) override;
  RequestPtr iallgather(ConstBuffer send, Buffer recv) override;
  RequestPtr igather(ConstBuffer send, Buffer recv, int root) override;
  RequestPtr iscatter(ConstBuffer send, Buffer recv, int root) override;
  RequestPtr ireduce(Buffer buf, ReduceOp op, int root) override;
  RequestPtr isend(ConstBuffer buf, int dest, int tag) override;
  RequestPtr irecv(Buffer buf, int source, int tag) override;
  void barrier() override;
  /// Aborts this rank's NCCL communicator and sends a failure notice over
  /// the collective check's MPI side (when the check is on).
  void report_failure(const std::string& reason) noexcept override;

  struct State;  // the NCCL communicator, stream and scratch, shared with requests

 private:
  std::shared_ptr<State> state_;
};

/// make_communicator("nccl")'s hook: an NcclCommunicator over
/// MPI_COMM_WORLD, or DeviceError naming why not (no GPU at run time),
/// raised before MPI is touched.
std::unique_ptr<Communicator> make_nccl_communicator(
    std::chrono::milliseconds timeout = std::chrono::milliseconds(60000));

}  // namespace magmadnn::distributed
