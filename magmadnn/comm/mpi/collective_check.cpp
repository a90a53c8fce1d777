#include "magmadnn/comm/mpi/collective_check.h"

#include <sstream>

#include "magmadnn/comm/mpi/mpi_check.h"

namespace magmadnn::distributed::mpi_detail {

const char* op_kind_name(OpKind k) noexcept {
  switch (k) {
    case OpKind::allreduce: return "allreduce";
    case OpKind::broadcast: return "broadcast";
    case OpKind::reduce_scatter: return "reduce_scatter";
    case OpKind::allgather: return "allgather";
    case OpKind::gather: return "gather";
    case OpKind::scatter: return "scatter";
    case OpKind::reduce: return "reduce";
    case OpKind::barrier: return "barrier";
    case OpKind::split: return "split";
    case OpKind::send: return "send";
    case OpKind::recv: return "recv";
  }
  return "?";
}

std::string describe(const Descriptor& d) {
  std::ostringstream os;
  os << op_kind_name(d.kind);
  if (d.kind == OpKind::barrier || d.kind == OpKind::split) return os.str();
  os << "(" << d.count << " x " << dtype_name(static_cast<dtype>(d.type));
  if (d.reduce >= 0) os << ", " << reduce_op_name(static_cast<ReduceOp>(d.reduce));
  if (d.root >= 0) os << ", root " << d.root;
  os << ")";
  return os.str();
}

std::string describe_with_bytes(const Descriptor& d) {
  std::ostringstream os;
  os << describe(d) << ", " << static_cast<std::size_t>(d.count) * dtype_size(static_cast<dtype>(d.type)) << " bytes";
  return os.str();
}

std::string mismatch_message(const Descriptor& mine, int rank, const Descriptor& theirs, int peer) {
  std::ostringstream os;
  os << "collective mismatch at step " << mine.step << " (collective #" << mine.seq << " on this communicator): rank "
     << rank << " calls " << describe(mine) << " but rank " << peer << " calls " << describe(theirs) << " (its step "
     << theirs.step << ")";
  return os.str();
}

bool same_call(const Descriptor& a, const Descriptor& b) noexcept {
  return a.seq == b.seq && a.kind == b.kind && a.count == b.count && a.type == b.type && a.root == b.root &&
         a.reduce == b.reduce;
}

DescriptorExchange::DescriptorExchange(MPI_Comm check_comm, int rank, int size, const Descriptor& mine, int tag)
    : buffers_(std::make_unique<Buffers>()), rank_(rank) {
  Buffers& b = *buffers_;
  b.mine = mine;
  for (int r = 0; r < size; ++r)
    if (r != rank) b.peers.push_back(r);
  const std::size_t n = b.peers.size();
  b.theirs.resize(n);
  b.arrived.assign(n, false);
  b.requests.assign(2 * n, MPI_REQUEST_NULL);
  b.completed.resize(2 * n);
  for (std::size_t i = 0; i < n; ++i)
    MAGMADNN_MPI_CHECK(MPI_Irecv(&b.theirs[i], sizeof(Descriptor), MPI_BYTE, b.peers[i], tag, check_comm,
                                 &b.requests[i]),
                       "posting the receive of rank " << b.peers[i] << "'s collective descriptor");
  for (std::size_t i = 0; i < n; ++i)
    MAGMADNN_MPI_CHECK(MPI_Isend(&b.mine, sizeof(Descriptor), MPI_BYTE, b.peers[i], tag, check_comm,
                                 &b.requests[n + i]),
                       "sending this rank's collective descriptor to rank " << b.peers[i]);
}

DescriptorExchange::~DescriptorExchange() {
  if (done_ || !buffers_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  Buffers& b = *buffers_;
  const std::size_t n = b.peers.size();
  for (std::size_t i = 0; i < b.requests.size(); ++i) {
    if (b.requests[i] == MPI_REQUEST_NULL) continue;
    if (i < n) MPI_Cancel(&b.requests[i]);
    MPI_Request_free(&b.requests[i]);
  }
  (void)buffers_.release();  // MPI may still touch them; the job is failing anyway
}

void DescriptorExchange::check_arrival(std::size_t i) const {
  const Buffers& b = *buffers_;
  const Descriptor& theirs = b.theirs[i];
  if (same_call(b.mine, theirs)) return;
  throw CommError(mismatch_message(b.mine, rank_, theirs, b.peers[i]));
}

bool DescriptorExchange::test() {
  // A mismatch found once stays found: its receive is complete, and a later
  // test() must not mistake the exchange for done.
  if (!mismatch_.empty()) throw CommError(mismatch_);
  if (done_) return true;
  Buffers& b = *buffers_;
  const std::size_t n = b.peers.size();
  if (n == 0) return done_ = true;
  int outcount = 0;
  const int rc = MPI_Testsome(static_cast<int>(b.requests.size()), b.requests.data(), &outcount, b.completed.data(),
                              MPI_STATUSES_IGNORE);
  MAGMADNN_CHECK(rc == MPI_SUCCESS, CommError,
                 "exchanging descriptors of " << describe(b.mine) << " at step " << b.mine.step
                                              << " failed: " << mpi_error_text(rc));
  if (outcount != MPI_UNDEFINED) {
    for (int k = 0; k < outcount; ++k) {
      const std::size_t i = static_cast<std::size_t>(b.completed[static_cast<std::size_t>(k)]);
      if (i < n) {
        b.arrived[i] = true;
        try {
          check_arrival(i);
        } catch (const CommError& e) {
          mismatch_ = e.what();
          throw;
        }
      }
    }
  }
  for (MPI_Request r : b.requests)
    if (r != MPI_REQUEST_NULL) return false;
  return done_ = true;
}

std::vector<int> DescriptorExchange::missing() const {
  std::vector<int> out;
  const Buffers& b = *buffers_;
  for (std::size_t i = 0; i < b.peers.size(); ++i)
    if (!b.arrived[i]) out.push_back(b.peers[i]);
  return out;
}

}  // namespace magmadnn::distributed::mpi_detail
