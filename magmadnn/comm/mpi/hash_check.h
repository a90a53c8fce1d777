/// @file hash_check.h
/// The O(log N) collective check of MpiCommunicator (check modes `overlap`
/// and `every`, docs/notes/communicators.md).
///
/// Each rank hashes its Descriptor (collective_check.h: the number of the
/// collective on the communicator, operation, dtype, count, root,
/// reduction; the communicator itself is implied, since the vote runs on
/// that communicator's own duplicate) to 64 bits h, and the ranks AND the
/// two words [h, ~h] together. Every rank then knows whether all agree: the
/// AND of h keeps a bit only where every h has it and the AND of ~h only
/// where none has it, so the result is [h, ~h] on this rank exactly when
/// every rank's h equals this rank's; and where two ranks differ in a bit,
/// both see it. (Two different descriptors with the same hash, chance about
/// 2^-64 per pair, would pass unnoticed.)
///
/// The AND is a non-blocking recursive doubling of point-to-point messages
/// of 16 bytes (not MPI_Iallreduce, whose schedule Open MPI 4.1 builds anew
/// for every call: about 2 us more per collective on 2 ranks, measured):
/// with P the largest power of two not above N, a rank r >= P first hands
/// its words to r - P and receives the result from it at the end; the P
/// others exchange with r ^ 1, r ^ 2, ..., r ^ (P / 2) in turn. A rank so
/// sends at most floor(log2 N) + 1 messages per collective (3 at 8 ranks, 4
/// at 16, 10 at 1,024), and receives as many. Each vote has a tag of its
/// own, so votes of collectives in flight together never mix, however their
/// waits interleave.
///
/// Only when the vote disagrees are the full descriptors exchanged, once,
/// by a DescriptorExchange with a tag of this collective's own, to name the
/// rank and the field in the message every check gives (mismatch_message).
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <memory>

#include "magmadnn/comm/mpi/collective_check.h"

namespace magmadnn::distributed::mpi_detail {

/// 64-bit hash of everything same_call compares (step excluded).
std::uint64_t descriptor_hash(const Descriptor& d) noexcept;

class HashCheck {
 public:
  /// Posts the vote's first messages. `tag_ub`: MPI_TAG_UB of `check_comm`.
  HashCheck(MPI_Comm check_comm, int rank, int size, const Descriptor& mine, int tag_ub);
  /// A vote still pending (after a timeout or a failure elsewhere): its
  /// receives are cancelled and its buffers deliberately leaked, since MPI
  /// may still read or write them.
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
  using Words = std::array<std::uint64_t, 2>;
  struct Buffers {  // heap-held so a pending vote can leak them safely
    Descriptor mine;
    Words value{};                      // the AND so far
    std::array<Words, 40> sent{};       // one per message sent (MPI reads them until the send completes)
    Words received{};
    std::array<MPI_Request, 2> requests{MPI_REQUEST_NULL, MPI_REQUEST_NULL};  // receive, send
  };
  struct Phase {
    int peer = -1;  // -1: no such phase, the vote is complete
    bool send = false;
    bool receive = false;
  };
  /// Phase i of this rank's part in the recursive doubling.
  Phase phase(int i) const noexcept;
  /// Posts phase_'s messages, or completes the vote when there is none.
  void post();
  /// After the vote: agreed_, or the diagnosis started.
  void conclude();
  void diagnose();
  std::unique_ptr<Buffers> buffers_;
  std::unique_ptr<DescriptorExchange> diagnosis_;
  MPI_Comm comm_;
  int rank_;
  int size_;
  int pow2_ = 1;  // the largest power of two not above size_
  int tag_;
  int phase_ = 0;
  int sends_ = 0;
  bool voted_ = false;
  bool agreed_ = false;
};

}  // namespace magmadnn::distributed::mpi_detail
