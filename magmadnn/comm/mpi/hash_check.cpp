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

}  // namespace

std::uint64_t descriptor_hash(const Descriptor& d) noexcept {
  std::uint64_t h = 0x6d61676d61646e6eULL;  // "magmadnn"
  h = mix(h, static_cast<std::uint64_t>(d.seq));
  h = mix(h, static_cast<std::uint64_t>(d.count));
  h = mix(h, static_cast<std::uint64_t>(static_cast<std::uint32_t>(d.kind)));
  h = mix(h, static_cast<std::uint64_t>(static_cast<std::uint32_t>(d.type)));
  h = mix(h, static_cast<std::uint64_t>(static_cast<std::uint32_t>(d.root)));
  return mix(h, static_cast<std::uint64_t>(static_cast<std::uint32_t>(d.reduce)));
}

HashCheck::HashCheck(MPI_Comm check_comm, int rank, int size, const Descriptor& mine, int tag_ub)
    : buffers_(std::make_unique<Buffers>()), comm_(check_comm), rank_(rank), size_(size), tag_ub_(tag_ub) {
  Buffers& b = *buffers_;
  b.mine = mine;
  if (size == 1) {
    voted_ = agreed_ = true;
    return;
  }
  const std::uint64_t h = descriptor_hash(mine);
  b.vote[0] = h;
  b.vote[1] = ~h;
  MAGMADNN_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, b.vote, 2, MPI_UINT64_T, MPI_BAND, check_comm, &b.request),
                     "posting the check of " << describe(mine));
}

HashCheck::~HashCheck() {
  if (voted_ || !buffers_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  (void)buffers_.release();  // a collective cannot be cancelled; the job is failing anyway
}

bool HashCheck::test() {
  if (agreed_) return true;
  if (diagnosis_) {
    diagnose();
    return false;
  }
  Buffers& b = *buffers_;
  int flag = 0;
  const int rc = MPI_Test(&b.request, &flag, MPI_STATUS_IGNORE);
  MAGMADNN_CHECK(rc == MPI_SUCCESS, CommError,
                 "checking " << describe(b.mine) << " at step " << b.mine.step << " failed: " << mpi_error_text(rc));
  if (!flag) return false;
  voted_ = true;
  const std::uint64_t h = descriptor_hash(b.mine);
  agreed_ = b.vote[0] == h && b.vote[1] == ~h;
  if (agreed_) return true;
  // Every rank saw the disagreement and exchanges its descriptor, under a
  // tag of this collective's own (tags 0-3 serve collective_check.h and
  // presence.h on the same duplicate).
  const int tag = kFirstDiagnosisTag + static_cast<int>(b.mine.seq % (tag_ub_ - kFirstDiagnosisTag + 1));
  diagnosis_ = std::make_unique<DescriptorExchange>(comm_, rank_, size_, b.mine, tag);
  diagnose();
  return false;
}

void HashCheck::diagnose() {
  if (!diagnosis_->test()) return;  // throws on the first descriptor that differs from this rank's
  // Every descriptor agrees with this rank's, yet the hashes did not: the
  // rank that differs disagrees with another rank, whose message names it.
  MAGMADNN_THROW(CommError, "collective mismatch at step " << buffers_->mine.step << " (collective #"
                                << buffers_->mine.seq << " on this communicator): the ranks' checks of "
                                << describe(buffers_->mine) << " disagree (every descriptor rank " << rank_
                                << " received agrees with its own)");
}

}  // namespace magmadnn::distributed::mpi_detail
