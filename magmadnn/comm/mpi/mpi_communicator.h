/// @file mpi_communicator.h
/// MpiCommunicator: the Communicator over MPI processes.
///
/// Works on duplicates of MPI_COMM_WORLD (or of a communicator given by the
/// caller), so its messages never mix with the application's own MPI
/// traffic, and set to MPI_ERRORS_RETURN, so every MPI failure becomes a
/// CommError instead of an abort. Every operation is a non-blocking MPI call
/// (MPI_Iallreduce, MPI_Ibcast, MPI_Ireduce_scatter_block, MPI_Iallgather,
/// MPI_Igather, MPI_Iscatter, MPI_Ireduce, MPI_Isend/Irecv, MPI_Ibarrier)
/// watched by a collective check (CollectiveCheck below: by default a
/// 64-bit hash of the call voted on by one allreduce, hash_check.h) and a
/// watchdog that names the ranks it waits for (presence.h).
///
/// Dtypes: float, double, int32, int64 natively; half and bfloat16 as 2-byte
/// elements reduced in float (mpi_types.h). ReduceOp::avg is the sum divided
/// by size() on completion; for int32/int64 that division truncates toward
/// zero (as NCCL's ncclAvg does).
///
/// Buffers: host always. Place::device needs a CUDA build (supports()); it
/// is passed to MPI directly when MPI is CUDA-aware, and otherwise copied
/// through a cached pinned host buffer. Without CUDA a device buffer raises
/// NotSupportedError.
///
/// Requires: the contract of communicator.h; one thread at a time drives a
/// communicator (see mpi_environment.h for threads across communicators);
/// argument errors of one rank (a root out of range, a receive buffer of
/// the wrong size) raise ValueError before anything is sent.
#pragma once

#include <mpi.h>

#include <memory>

#include "magmadnn/comm/communicator.h"

namespace magmadnn::distributed {

/// How an MpiCommunicator checks that every rank calls the same collective
/// (docs/notes/communicators.md states what each refuses before MPI):
///  - overlap (the default): one allreduce of a 64-bit hash of the call
///    (hash_check.h) runs beside the collective; a mismatch is named on
///    every rank, but after MPI has matched the two calls;
///  - every: each collective waits for that vote before its data is posted,
///    so a mismatched collective never reaches MPI;
///  - off: no check on the normal path; the watchdog's failure path still
///    asks the ranks (presence.h) and names a mismatched collective that hangs;
///  - pairwise: the 40-byte descriptor to every other rank beside each
///    collective (collective_check.h), O(N^2) messages, kept for comparison.
enum class CollectiveCheck { overlap, every, off, pairwise };
/// "overlap", "every", "off", "pairwise".
const char* collective_check_name(CollectiveCheck c) noexcept;
/// The mode named `name`; "strict" is kept as another name of "every".
/// Throws ValueError naming the accepted names.
CollectiveCheck parse_collective_check(const std::string& name);

namespace mpi_detail {
struct CommState;
struct Staged;
struct Descriptor;
class MpiRequest;
}  // namespace mpi_detail

class MpiCommunicator final : public Communicator {
 public:
  /// Over every process of the job: a duplicate of MPI_COMM_WORLD.
  /// Initialises MPI if the program has not (MpiEnvironment). Collective.
  MpiCommunicator();
  /// Over the processes of `comm`, which is duplicated (the caller keeps
  /// and frees `comm`). Collective over `comm`.
  explicit MpiCommunicator(MPI_Comm comm);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  /// Splits this communicator as MPI_Comm_split: ranks with the same
  /// `color` form a new communicator, ordered by `key` (then by rank here).
  /// A negative color leaves this rank out: it gets nullptr. The new one
  /// inherits timeout() and step(). Collective; checked like one.
  /// Failures flow down, not up: when this communicator fails on a rank, or
  /// hears of a failure (a notice, report_failure), the new one fails there
  /// too, so a rank waiting in the new one for a rank that reported a
  /// failure here stops with its reason; a failure of the new one leaves
  /// this one usable, so that a part of the job (a search's trial) can fail
  /// alone. The new one keeps this one's state alive as long as it lives.
  std::unique_ptr<MpiCommunicator> split(int color, int key);
  /// Splits this communicator as MPI_Comm_split_type(MPI_COMM_TYPE_SHARED):
  /// the ranks that can share memory (one node, as the MPI library sees
  /// nodes; Open MPI: the ranks one daemon started) form a new communicator,
  /// ordered by rank here. Inherits and fails as split(). Collective.
  std::unique_ptr<MpiCommunicator> split_shared();

  /// The MPI communicator the data moves on, to derive others from
  /// (MPI_Comm_dup, MPI_Comm_split, or MpiCommunicator(comm())). Not to be
  /// freed, nor used for traffic of one's own: its order of collectives and
  /// its tags belong to this communicator.
  MPI_Comm comm() const noexcept;
  /// Whether device buffers go to MPI directly (CUDA-aware MPI in a CUDA build).
  bool cuda_aware() const noexcept;

  /// The collective check (CollectiveCheck), for the collectives started
  /// from now on. A new communicator reads the environment variable
  /// MAGMADNN_COLLECTIVE_CHECK (overlap, every, off, pairwise; strict is
  /// every; unset is overlap; anything else raises ValueError). In mode
  /// every a collective whose count, dtype, root or reduction differs
  /// between ranks raises CommError on every rank and never reaches MPI
  /// (which would match the two calls and write past the smaller buffer),
  /// at the cost of one 16-byte allreduce ahead of each collective's data
  /// (docs/notes/communicators.md measures it). A communicator split from
  /// this one inherits the mode. Requires: every rank uses the same mode.
  void set_collective_check(CollectiveCheck mode) noexcept;
  CollectiveCheck collective_check() const noexcept;
  /// The earlier name: true is set_collective_check(every), false overlap.
  void set_strict_checks(bool strict) noexcept;
  /// Whether the mode is every.
  bool strict_checks() const noexcept;

  int rank() const noexcept override;
  int size() const noexcept override;
  std::string backend() const override { return "mpi"; }
  bool supports(Place place) const noexcept override;

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
  /// Sends a failure notice (CommState::send_notice) to every other rank.
  void report_failure(const std::string& reason) noexcept override;

 private:
  std::unique_ptr<mpi_detail::MpiRequest> start_collective(mpi_detail::Descriptor d);
  /// `part` (from MPI_Comm_split*, freed here) as a child of this one; nullptr for MPI_COMM_NULL.
  std::unique_ptr<MpiCommunicator> adopt_split(MPI_Comm part);
  /// `data` as MPI will see it (device buffers staged unless CUDA-aware MPI
  /// takes them; `host_result` forces staging so the host can finish the
  /// result, as avg does).
  mpi_detail::Staged stage(const void* data, std::size_t bytes, Place place, bool read, bool host_result = false);
  template <typename B>
  void check_buffer(const B& b, const char* op, const char* which) const;
  std::shared_ptr<mpi_detail::CommState> state_;
};

}  // namespace magmadnn::distributed
