// Every collective and point-to-point call of MpiCommunicator for every
// dtype, against values computed locally: element i of rank r is
// r + 1 + i % 7 (mpi_world.h), so sums, extremes and averages over P ranks
// have closed forms. Run at 1, 2 and 4 ranks.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "magmadnn/core/half.h"
#include "mpi_world.h"

namespace {

using namespace magmadnn;
using namespace magmadnn::distributed;
using mpitest::value;

template <typename T>
std::vector<T> filled(int r, std::size_t n, std::size_t offset = 0) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = T(value(r, offset + i));
  return v;
}

template <typename T>
double at(const std::vector<T>& v, std::size_t i) {
  return static_cast<double>(v[i]);
}

template <typename T>
constexpr bool is_integer = std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;

// sum over r of value(r, i)
double sum_of(int p, std::size_t i) { return p * (p + 1) / 2.0 + p * static_cast<double>(i % 7); }

template <typename T>
class MpiCollectives : public ::testing::Test {};
using Dtypes = ::testing::Types<float, double, std::int32_t, std::int64_t, half, bfloat16>;
TYPED_TEST_SUITE(MpiCollectives, Dtypes);

constexpr std::size_t kN = 37;  // not a multiple of anything in particular

TYPED_TEST(MpiCollectives, AllreduceEveryOp) {
  using T = TypeParam;
  MpiCommunicator& c = world();
  const int p = c.size();
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::avg}) {
    std::vector<T> v = filled<T>(c.rank(), kN);
    c.allreduce(host_buffer(v.data(), v.size()), op);
    for (std::size_t i = 0; i < kN; ++i) {
      double want = 0;
      switch (op) {
        case ReduceOp::sum: want = sum_of(p, i); break;
        case ReduceOp::max: want = value(p - 1, i); break;
        case ReduceOp::min: want = value(0, i); break;
        case ReduceOp::avg:
          want = is_integer<T> ? static_cast<double>(static_cast<std::int64_t>(sum_of(p, i)) / p) : sum_of(p, i) / p;
          break;
      }
      ASSERT_EQ(at(v, i), want) << reduce_op_name(op) << " element " << i << " on rank " << c.rank() << " of " << p;
    }
  }
}

TYPED_TEST(MpiCollectives, BroadcastFromEveryRoot) {
  using T = TypeParam;
  MpiCommunicator& c = world();
  for (int root = 0; root < c.size(); ++root) {
    std::vector<T> v = filled<T>(c.rank(), kN);
    c.broadcast(host_buffer(v.data(), v.size()), root);
    for (std::size_t i = 0; i < kN; ++i) ASSERT_EQ(at(v, i), value(root, i)) << "root " << root << " element " << i;
  }
}

TYPED_TEST(MpiCollectives, ReduceScatterSumAndAvg) {
  using T = TypeParam;
  MpiCommunicator& c = world();
  const int p = c.size();
  const std::size_t block = 5;
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
    const std::vector<T> send = filled<T>(c.rank(), block * p);
    std::vector<T> recv(block, T(-1));
    c.reduce_scatter(host_buffer(send.data(), send.size()), host_buffer(recv.data(), recv.size()), op);
    for (std::size_t i = 0; i < block; ++i) {
      const double s = sum_of(p, c.rank() * block + i);
      const double want =
          op == ReduceOp::sum ? s : (is_integer<T> ? static_cast<double>(static_cast<std::int64_t>(s) / p) : s / p);
      ASSERT_EQ(at(recv, i), want) << reduce_op_name(op) << " element " << i;
    }
  }
}

TYPED_TEST(MpiCollectives, AllgatherAndInPlace) {
  using T = TypeParam;
  MpiCommunicator& c = world();
  const int p = c.size();
  const std::vector<T> send = filled<T>(c.rank(), kN);
  std::vector<T> recv(kN * p, T(-1));
  c.allgather(host_buffer(send.data(), send.size()), host_buffer(recv.data(), recv.size()));
  for (int r = 0; r < p; ++r)
    for (std::size_t i = 0; i < kN; ++i) ASSERT_EQ(at(recv, r * kN + i), value(r, i)) << "block " << r;

  // This rank's block already in the receive buffer (MPI_IN_PLACE).
  std::vector<T> inplace(kN * p, T(-1));
  for (std::size_t i = 0; i < kN; ++i) inplace[c.rank() * kN + i] = T(value(c.rank(), i));
  c.allgather(host_buffer(static_cast<const T*>(inplace.data() + c.rank() * kN), kN),
              host_buffer(inplace.data(), inplace.size()));
  for (std::size_t i = 0; i < inplace.size(); ++i) ASSERT_EQ(at(inplace, i), at(recv, i)) << "in place, element " << i;
}

TYPED_TEST(MpiCollectives, GatherToLastRank) {
  using T = TypeParam;
  MpiCommunicator& c = world();
  const int p = c.size();
  const int root = p - 1;
  const std::vector<T> send = filled<T>(c.rank(), kN);
  std::vector<T> recv(c.rank() == root ? kN * p : 0, T(-1));
  c.gather(host_buffer(send.data(), send.size()), host_buffer(recv.data(), recv.size()), root);
  if (c.rank() != root) return;
  for (int r = 0; r < p; ++r)
    for (std::size_t i = 0; i < kN; ++i) ASSERT_EQ(at(recv, r * kN + i), value(r, i)) << "block " << r;
}

TYPED_TEST(MpiCollectives, ScatterFromRankZero) {
  using T = TypeParam;
  MpiCommunicator& c = world();
  const int p = c.size();
  // Root's send: block r holds value(r, i), so rank r receives its own values.
  std::vector<T> send;
  if (c.rank() == 0)
    for (int r = 0; r < p; ++r) {
      const std::vector<T> b = filled<T>(r, kN);
      send.insert(send.end(), b.begin(), b.end());
    }
  std::vector<T> recv(kN, T(-1));
  c.scatter(host_buffer(static_cast<const T*>(send.data()), send.size()), host_buffer(recv.data(), recv.size()), 0);
  for (std::size_t i = 0; i < kN; ++i) ASSERT_EQ(at(recv, i), value(c.rank(), i));
}

TYPED_TEST(MpiCollectives, ReduceToEachRootLeavesOthersUnchanged) {
  using T = TypeParam;
  MpiCommunicator& c = world();
  const int p = c.size();
  for (int root = 0; root < p; ++root) {
    std::vector<T> v = filled<T>(c.rank(), kN);
    c.reduce(host_buffer(v.data(), v.size()), ReduceOp::sum, root);
    for (std::size_t i = 0; i < kN; ++i)
      ASSERT_EQ(at(v, i), c.rank() == root ? sum_of(p, i) : value(c.rank(), i)) << "root " << root;
  }
}

TYPED_TEST(MpiCollectives, SendRecvRing) {
  using T = TypeParam;
  MpiCommunicator& c = world();
  const int p = c.size();
  const int next = (c.rank() + 1) % p;
  const int prev = (c.rank() + p - 1) % p;
  const std::vector<T> out = filled<T>(c.rank(), kN);
  std::vector<T> in(kN, T(-1));
  RequestPtr r = c.irecv(host_buffer(in.data(), in.size()), prev, 11);
  RequestPtr s = c.isend(host_buffer(out.data(), out.size()), next, 11);
  s->wait();
  r->wait();
  for (std::size_t i = 0; i < kN; ++i) ASSERT_EQ(at(in, i), value(prev, i));
}

}  // namespace
