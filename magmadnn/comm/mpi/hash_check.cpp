#include "magmadnn/comm/mpi/hash_check.h"

#include "magmadnn/comm/mpi/mpi_check.h"
#include "magmadnn/comm/mpi/presence.h"

namespace magmadnn::distributed::mpi_detail {

namespace {

// splitmix64's finaliser: every input bit moves about half the output bits.
std::uint64_t mix(std::uint64_t h, std::uint64_t v) noexcept {
  std::uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t word(std::int32_t v) noexcept { return static_cast<std::uint32_t>(v); }

}  // namespace

std::uint64_t descriptor_hash(const Descriptor& d) noexcept {
  std::uint64_t h = 0x6d61676d61646e6eULL;  // "magmadnn"
  h = mix(h, static_cast<std::uint64_t>(d.seq));
  h = mix(h, static_cast<std::uint64_t>(d.count));
  h = mix(h, word(static_cast<std::int32_t>(d.kind)));
  h = mix(h, word(d.type));
  h = mix(h, word(d.root));
  return mix(h, word(d.reduce));
}

HashCheck::HashCheck(MPI_Comm check_comm, int rank, int size, const Descriptor& mine, int tag_ub)
    : buffers_(std::make_unique<Buffers>()), comm_(check_comm), rank_(rank), size_(size) {
  Buffers& b = *buffers_;
  b.mine = mine;
  const std::uint64_t h = descriptor_hash(mine);
  b.value = {h, ~h};
  while (pow2_ * 2 <= size) pow2_ *= 2;
  // Tags 0-3 serve collective_check.h and presence.h on the same duplicate;
  // a vote takes an even tag from kFirstVoteTag, its diagnosis the odd one after.
  const std::int64_t votes_in_tags = (tag_ub - kFirstVoteTag + 1) / 2;
  tag_ = kFirstVoteTag + 2 * static_cast<int>(mine.seq % votes_in_tags);
  post();
}

HashCheck::~HashCheck() {
  if (voted_ || !buffers_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  Buffers& b = *buffers_;
  if (b.requests[0] != MPI_REQUEST_NULL) MPI_Cancel(&b.requests[0]);
  for (MPI_Request& r : b.requests)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  (void)buffers_.release();  // MPI may still touch them; the job is failing anyway
}

HashCheck::Phase HashCheck::phase(int i) const noexcept {
  const int extra = size_ - pow2_;
  if (rank_ >= pow2_) return i == 0 ? Phase{rank_ - pow2_, true, true} : Phase{};  // hand over, get the result
  if (rank_ < extra) {
    if (i == 0) return Phase{rank_ + pow2_, false, true};  // fold in rank r + P's words
    --i;
  }
  int rounds = 0;
  while ((1 << rounds) < pow2_) ++rounds;
  if (i < rounds) return Phase{rank_ ^ (1 << i), true, true};
  if (rank_ < extra && i == rounds) return Phase{rank_ + pow2_, true, false};  // the result to rank r + P
  return Phase{};
}

void HashCheck::post() {
  Buffers& b = *buffers_;
  const Phase p = phase(phase_);
  if (p.peer < 0) {
    conclude();
    return;
  }
  if (p.receive)
    MAGMADNN_MPI_CHECK(MPI_Irecv(b.received.data(), 2, MPI_UINT64_T, p.peer, tag_, comm_, &b.requests[0]),
                       "receiving rank " << p.peer << "'s check of " << describe(b.mine));
  if (p.send) {
    Words& out = b.sent[static_cast<std::size_t>(sends_++)];
    out = b.value;
    MAGMADNN_MPI_CHECK(MPI_Isend(out.data(), 2, MPI_UINT64_T, p.peer, tag_, comm_, &b.requests[1]),
                       "sending the check of " << describe(b.mine) << " to rank " << p.peer);
  }
}

void HashCheck::conclude() {
  voted_ = true;
  const std::uint64_t h = descriptor_hash(buffers_->mine);
  agreed_ = buffers_->value[0] == h && buffers_->value[1] == ~h;
  // Every rank saw the disagreement and exchanges its descriptor.
  if (!agreed_) diagnosis_ = std::make_unique<DescriptorExchange>(comm_, rank_, size_, buffers_->mine, tag_ + 1);
}

bool HashCheck::test() {
  while (!voted_) {
    Buffers& b = *buffers_;
    int done = 0;
    const int rc = MPI_Testall(2, b.requests.data(), &done, MPI_STATUSES_IGNORE);
    MAGMADNN_CHECK(rc == MPI_SUCCESS, CommError,
                   "checking " << describe(b.mine) << " at step " << b.mine.step << " failed: " << mpi_error_text(rc));
    if (!done) return false;
    if (phase(phase_).receive) {
      b.value[0] &= b.received[0];
      b.value[1] &= b.received[1];
    }
    ++phase_;
    post();
  }
  if (agreed_) return true;
  diagnose();
  return false;
}

void HashCheck::diagnose() {
  if (!diagnosis_->test()) return;  // throws on the first descriptor that differs from this rank's
  // Every descriptor agrees with this rank's, yet the votes did not: cannot
  // happen while the hash covers exactly what same_call compares.
  MAGMADNN_THROW(CommError, "collective mismatch at step " << buffers_->mine.step << " (collective #"
                                << buffers_->mine.seq << " on this communicator): the ranks' checks of "
                                << describe(buffers_->mine) << " disagree (every descriptor rank " << rank_
                                << " received agrees with its own)");
}

}  // namespace magmadnn::distributed::mpi_detail
