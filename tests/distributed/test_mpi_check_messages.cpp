// What the collective check costs in MPI traffic, per collective and rank,
// counted by PMPI wrappers (issue 45: at most 2 ceil(log2 N) messages sent
// per rank for the check, at 8 and 16 ranks).
//
// The wrappers below replace MPI's entry points for this program and for
// libmagmadnn (the program exports them, ENABLE_EXPORTS), count each call
// that starts communication by the communicator it names, and pass it on to
// PMPI_*. The vote (hash_check.h) is made of MPI_Isend / MPI_Irecv of 16
// bytes, one message each, so here the calls counted are the messages the
// check sends: the bound is checked on the wire's messages, not on an MPI
// collective whose internal messages no wrapper would see (Open MPI's own
// sends inside a collective go through its PML, not MPI_Isend). What the
// test establishes: in modes overlap and every a rank sends exactly log2 N
// messages per collective (N a power of two; at most floor(log2 N) + 1
// otherwise) and receives as many, and no MPI collective is used; mode off
// sends nothing; mode pairwise sends N - 1, above the bound from 8 ranks
// on (so the test can fail).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "mpi_world.h"

namespace {

struct Counts {
  long sends = 0;       // MPI_Isend, MPI_Send
  long receives = 0;    // MPI_Irecv, MPI_Recv
  long collective = 0;  // collectives, blocking or not
};
std::map<MPI_Comm, Counts> g_counts;

}  // namespace

extern "C" {
int MPI_Isend(const void* b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request* r) {
  ++g_counts[c].sends;
  return PMPI_Isend(b, n, t, d, tag, c, r);
}
int MPI_Irecv(void* b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Request* r) {
  ++g_counts[c].receives;
  return PMPI_Irecv(b, n, t, s, tag, c, r);
}
int MPI_Send(const void* b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c) {
  ++g_counts[c].sends;
  return PMPI_Send(b, n, t, d, tag, c);
}
int MPI_Recv(void* b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Status* st) {
  ++g_counts[c].receives;
  return PMPI_Recv(b, n, t, s, tag, c, st);
}
int MPI_Iallreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request* q) {
  ++g_counts[c].collective;
  return PMPI_Iallreduce(s, r, n, t, op, c, q);
}
int MPI_Allreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  ++g_counts[c].collective;
  return PMPI_Allreduce(s, r, n, t, op, c);
}
int MPI_Ibcast(void* b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request* q) {
  ++g_counts[c].collective;
  return PMPI_Ibcast(b, n, t, root, c, q);
}
int MPI_Iallgather(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, MPI_Comm c,
                   MPI_Request* q) {
  ++g_counts[c].collective;
  return PMPI_Iallgather(s, sn, st, r, rn, rt, c, q);
}
int MPI_Ibarrier(MPI_Comm c, MPI_Request* q) {
  ++g_counts[c].collective;
  return PMPI_Ibarrier(c, q);
}
}  // extern "C"

namespace {

using namespace magmadnn;
using namespace magmadnn::distributed;

constexpr int kCollectives = 6;  // 3 allreduces, 3 broadcasts

// The calls per collective this rank made on the communicator's check
// duplicates (everything but the data communicator), in `mode`.
Counts check_calls(CollectiveCheck mode, Counts* data) {
  MpiCommunicator c(world().comm());
  c.set_collective_check(mode);
  c.set_timeout(std::chrono::seconds(60));
  std::vector<float> v(256, 1.0f);
  c.allreduce(host_buffer(v.data(), v.size()), ReduceOp::sum);  // warm-up
  g_counts.clear();
  for (int k = 0; k < kCollectives / 2; ++k) {
    c.allreduce(host_buffer(v.data(), v.size()), ReduceOp::sum);
    c.broadcast(host_buffer(v.data(), v.size()), k % c.size());
  }
  Counts check;
  for (const auto& [comm, n] : g_counts) {
    Counts& into = comm == c.comm() ? *data : check;
    into.sends += n.sends;
    into.receives += n.receives;
    into.collective += n.collective;
  }
  g_counts.clear();
  world().barrier();
  return check;
}

int log2_ceil(int size) { return static_cast<int>(std::ceil(std::log2(static_cast<double>(size)))); }
long bound(int size) { return 2L * log2_ceil(size); }

TEST(CollectiveCheckMessages, TheVoteSendsLog2NMessagesPerCollective) {
  const int n = world().size();
  if (n < 2) GTEST_SKIP() << "needs 2 ranks";
  const bool power_of_two = (n & (n - 1)) == 0;
  for (CollectiveCheck mode : {CollectiveCheck::overlap, CollectiveCheck::every}) {
    Counts data;
    const Counts check = check_calls(mode, &data);
    SCOPED_TRACE(collective_check_name(mode));
    EXPECT_EQ(data.collective, kCollectives) << "one MPI collective per collective on the data communicator";
    EXPECT_EQ(check.collective, 0) << "the vote is point to point";
    EXPECT_LE(check.sends, bound(n) * kCollectives) << "issue 45's bound: 2 ceil(log2 N) per collective";
    EXPECT_LE(check.sends, (static_cast<long>(std::floor(std::log2(n))) + 1) * kCollectives);
    if (power_of_two) {
      EXPECT_EQ(check.sends, static_cast<long>(log2_ceil(n)) * kCollectives) << "recursive doubling";
      EXPECT_EQ(check.receives, static_cast<long>(log2_ceil(n)) * kCollectives);
    }
  }
}

TEST(CollectiveCheckMessages, OffSendsNothingAndPairwiseIsQuadratic) {
  const int n = world().size();
  if (n < 2) GTEST_SKIP() << "needs 2 ranks";
  Counts data;
  const Counts off = check_calls(CollectiveCheck::off, &data);
  EXPECT_EQ(off.sends + off.receives + off.collective, 0);
  const Counts pairwise = check_calls(CollectiveCheck::pairwise, &data);
  EXPECT_EQ(pairwise.sends, static_cast<long>(n - 1) * kCollectives) << "a descriptor to every other rank";
  EXPECT_EQ(pairwise.receives, static_cast<long>(n - 1) * kCollectives);
  if (n >= 8) EXPECT_GT(pairwise.sends, bound(n) * kCollectives) << "pairwise is over the bound the vote keeps";
}

}  // namespace
