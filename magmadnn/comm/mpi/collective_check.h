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
/// Cost: 2 (size - 1) messages of sizeof(Descriptor) bytes per collective.
/// MpiCommunicator uses it ahead of every collective only in the check mode
/// `pairwise` (kept for comparison); its default checks a 64-bit hash of the
/// descriptor with one allreduce (hash_check.h) and exchanges descriptors
/// this way only once that vote has found a mismatch, to name it. The NCCL
/// communicator still exchanges descriptors ahead of every collective.
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
/// describe(d) and the bytes per rank: "allreduce(1024 x float32, sum), 4096 bytes".
std::string describe_with_bytes(const Descriptor& d);
/// The message every check gives for two ranks that disagree: "collective
/// mismatch at step S (collective #N on this communicator): rank R calls ...
/// but rank P calls ... (its step T)".
std::string mismatch_message(const Descriptor& mine, int rank, const Descriptor& theirs, int peer);
/// Whether two descriptors ask for the same collective (step excluded).
bool same_call(const Descriptor& a, const Descriptor& b) noexcept;

/// One collective's exchange: posted by the constructor, progressed by test().
class DescriptorExchange {
 public:
  /// `tag`: 0 for the exchange ahead of a collective (mode pairwise, and
  /// the NCCL communicator), where call order pairs the messages; the hash
  /// check's diagnosis of a mismatch passes a tag of its own per collective
  /// (hash_check.h), since its exchanges may start in another order.
  DescriptorExchange(MPI_Comm check_comm, int rank, int size, const Descriptor& mine, int tag = 0);
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
