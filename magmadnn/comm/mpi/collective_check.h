/// @file collective_check.h
/// The descriptor exchange behind MpiCommunicator's mismatch detection and
/// watchdog.
///
/// Before a collective's data moves, each rank sends a small Descriptor
/// (its number in the communicator's call order, operation, count, dtype,
/// root, reduction, step) to every other rank on a duplicate communicator
/// kept for this purpose, and posts a receive for every other rank's
/// descriptor. Because MPI keeps messages between two ranks on one
/// communicator in order, the k-th descriptor from rank r always answers
/// this rank's k-th collective, so:
///  - a descriptor that differs names both ranks' views (a rank that skipped
///    a collective shows up as calling the next one instead);
///  - a descriptor that has not arrived when the timeout passes names a
///    rank that never reached this collective.
/// Point-to-point operations use the same Descriptor as a header sent ahead
/// of the data (on a third duplicate), so a send and its receive that
/// disagree on count or dtype are named too.
///
/// Cost: 2 (size - 1) messages of sizeof(Descriptor) bytes per collective,
/// posted together with the collective and never waited for separately (the
/// default), so a mismatch is reported after MPI has matched the calls.
/// With strict checks (MpiCommunicator::set_strict_checks,
/// MAGMADNN_COLLECTIVE_CHECK=strict) the data operation is posted only once
/// the exchange is complete and agrees, so a collective whose count, dtype,
/// root or reduction differs between ranks never reaches MPI (which would
/// otherwise match the two and write past the smaller buffer); each
/// collective then waits one exchange of descriptors before its data moves.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/comm/communicator.h"

namespace magmadnn::distributed::mpi_detail {

enum class OpKind : std::int32_t {
  allreduce, broadcast, reduce_scatter, allgather, gather, scatter, reduce, barrier, split, send, recv
};
const char* op_kind_name(OpKind k) noexcept;

/// What one rank is about to do. Plain bytes on the wire (homogeneous ranks).
struct Descriptor {
  std::int64_t seq = 0;    // number of the collective in call order (tag for point to point)
  std::int64_t count = 0;  // elements per rank, as the operation's contract counts them
  std::int64_t step = -1;  // Communicator::step() at the call (quoted, not compared)
  OpKind kind = OpKind::barrier;
  std::int32_t type = 0;    // dtype
  std::int32_t root = -1;   // -1 where the operation has none
  std::int32_t reduce = -1; // ReduceOp, -1 where the operation has none
};
static_assert(sizeof(Descriptor) == 40, "the descriptor's wire size is documented in docs/distributed.md");

/// "allreduce(1024 x f32, sum)", "broadcast(10 x i64, root 2)", "barrier".
std::string describe(const Descriptor& d);
/// Whether two descriptors ask for the same collective (step excluded).
bool same_call(const Descriptor& a, const Descriptor& b) noexcept;

/// One collective's exchange: posted by the constructor, progressed by test().
class DescriptorExchange {
 public:
  DescriptorExchange(MPI_Comm check_comm, int rank, int size, const Descriptor& mine);
  /// Completed: nothing to do. Pending (after a timeout): its receives are
  /// cancelled and its buffers deliberately leaked, since MPI may still
  /// write into them.
  ~DescriptorExchange();
  DescriptorExchange(const DescriptorExchange&) = delete;
  DescriptorExchange& operator=(const DescriptorExchange&) = delete;

  /// Progresses the exchange; true once every descriptor has arrived and
  /// every send completed. Throws CommError on the first descriptor that
  /// differs from this rank's.
  bool test();
  /// The ranks whose descriptor has not arrived, ascending.
  std::vector<int> missing() const;
  const Descriptor& mine() const noexcept { return buffers_->mine; }

 private:
  struct Buffers {  // heap-held so a failed exchange can leak them safely
    Descriptor mine;
    std::vector<Descriptor> theirs;  // by peer index
    std::vector<MPI_Request> requests;  // receives (peer order), then sends
    std::vector<int> peers;
    std::vector<bool> arrived;
    std::vector<int> completed;  // MPI_Testsome's output, kept to avoid an allocation per poll
  };
  void check_arrival(std::size_t peer_index) const;
  std::unique_ptr<Buffers> buffers_;
  int rank_;
  bool done_ = false;
  std::string mismatch_;  // the first mismatch, thrown again by every later test()
};

}  // namespace magmadnn::distributed::mpi_detail
