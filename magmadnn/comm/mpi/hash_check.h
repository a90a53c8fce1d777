/// @file hash_check.h
/// The O(log N) collective check of MpiCommunicator (check modes `overlap`
/// and `every`, docs/notes/communicators.md).
///
/// Each rank hashes its Descriptor (collective_check.h: the number of the
/// collective on the communicator, operation, dtype, count, root,
/// reduction; the communicator itself is implied, since the vote runs on
/// that communicator's own duplicate) to 64 bits h, and the ranks take one
/// MPI_Iallreduce with MPI_BAND over the two words [h, ~h]. Every rank then
/// knows whether all agree: the AND of h keeps a bit only where every h has
/// it and the AND of ~h only where none has it, so the result is [h, ~h] on
/// this rank exactly when every rank's h equals this rank's; and where two
/// ranks differ in a bit, both see it. (Two different descriptors with the
/// same hash, chance about 2^-64 per pair, would pass unnoticed.)
///
/// Only when the vote disagrees are the full descriptors exchanged, once,
/// by a DescriptorExchange with a tag of this collective's own, to name the
/// rank and the field in the message every check gives
/// (mismatch_message). The votes of one communicator are MPI collectives on
/// its check duplicate, started in call order on every rank, so the k-th
/// vote always pairs the k-th collectives, however their waits interleave.
///
/// Cost per collective on the normal path: one MPI_Iallreduce of 16 bytes
/// (Open MPI's libnbc runs it as recursive doubling: about log2 N messages
/// per rank) and the hash (a few nanoseconds).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "magmadnn/comm/mpi/collective_check.h"

namespace magmadnn::distributed::mpi_detail {

/// 64-bit hash of everything same_call compares (step excluded).
std::uint64_t descriptor_hash(const Descriptor& d) noexcept;

class HashCheck {
 public:
  /// Posts the vote. `tag_ub`: MPI_TAG_UB of `check_comm`, for the
  /// diagnosis's tag.
  HashCheck(MPI_Comm check_comm, int rank, int size, const Descriptor& mine, int tag_ub);
  /// A vote still pending (after a timeout or a failure elsewhere) cannot be
  /// cancelled: its buffers are deliberately leaked, since MPI may still
  /// write into them.
  ~HashCheck();
  HashCheck(const HashCheck&) = delete;
  HashCheck& operator=(const HashCheck&) = delete;

  /// Progresses the vote (and the diagnosis after a disagreement); true
  /// once every rank has voted and all agree. Throws CommError naming the
  /// first rank whose descriptor differs, the same error on every call after.
  bool test();
  /// Whether every rank has voted, i.e. reached this collective.
  bool voted() const noexcept { return voted_; }
  const Descriptor& mine() const noexcept { return buffers_->mine; }

 private:
  struct Buffers {  // heap-held so a pending vote can leak them safely
    Descriptor mine;
    std::uint64_t vote[2] = {0, 0};
    MPI_Request request = MPI_REQUEST_NULL;
  };
  void diagnose();
  std::unique_ptr<Buffers> buffers_;
  std::unique_ptr<DescriptorExchange> diagnosis_;
  MPI_Comm comm_;
  int rank_;
  int size_;
  int tag_ub_;
  bool voted_ = false;
  bool agreed_ = false;
};

}  // namespace magmadnn::distributed::mpi_detail
