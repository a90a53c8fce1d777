// NcclCommunicator against the host: every collective, point to point and
// the barrier, in every dtype, on random data; the result on each rank is
// compared with the same operation computed on the host from every rank's
// input (each rank regenerates the others' inputs from their seeds). At one
// rank the reference is also LocalCommunicator's result on host copies.
//
// Run whole under mpirun (1 and 2 ranks, tests/cuda/CMakeLists.txt): main()
// initialises MPI and joins one communicator for all cases. Without a GPU,
// or with fewer GPUs than ranks where NCCL cannot share one, the run skips
// with the reason and exits 77 (CTest's SKIP_RETURN_CODE); only the
// NcclNoGpu case, which checks that reason, runs then.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "magmadnn/backend/backend.h"
#include "magmadnn/backend/registry.h"
#include "magmadnn/core/half.h"
#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/comm/local_communicator.h"
#include "magmadnn/comm/nccl/nccl_communicator.h"

// Not `using namespace magmadnn`: its ReduceOp (the backend's) would clash
// with the communicator's.
using namespace magmadnn::distributed;
using magmadnn::bfloat16;
using magmadnn::CommError;
using magmadnn::CopyKind;
using magmadnn::cuda_backend;
using magmadnn::cuda_unavailable_reason;
using magmadnn::DeviceError;
using magmadnn::dtype;
using magmadnn::dtype_name;
using magmadnn::dtype_size;
using magmadnn::half;
using magmadnn::has_cuda_device;
using magmadnn::NotSupportedError;
using magmadnn::ValueError;

namespace {

std::unique_ptr<NcclCommunicator> g_comm;  // joined by main() when the run does not skip
std::string g_skip;                        // why the run skips (empty: it runs)
std::string g_join_error;                  // why joining failed on a machine that should have run

// -- host values of any dtype ----------------------------------------------------

// Small nonzero integers: exact in every dtype, and so are their sums over
// a few ranks, max and min; only avg rounds (float types) or truncates (ints).
std::vector<double> input(std::size_t n, int rank, std::uint64_t salt) {
  std::mt19937_64 gen(salt * 1000003u + static_cast<std::uint64_t>(rank) * 7919u + 17u);
  std::uniform_int_distribution<int> d(1, 8);
  std::vector<double> v(n);
  for (double& x : v) x = (gen() & 1u) ? d(gen) : -d(gen);
  return v;
}

template <typename T>
constexpr bool is_16bit_float = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

template <typename T>
void put(std::uint8_t* p, double v) {
  T x;
  if constexpr (is_16bit_float<T>) {
    x = T(static_cast<float>(v));
  } else {
    x = static_cast<T>(v);
  }
  std::memcpy(p, &x, sizeof(T));
}

template <typename T>
double get(const std::uint8_t* p) {
  T x;
  std::memcpy(&x, p, sizeof(T));
  if constexpr (is_16bit_float<T>) {
    return static_cast<float>(x);
  } else {
    return static_cast<double>(x);
  }
}

std::vector<std::uint8_t> encode(dtype t, const std::vector<double>& v) {
  const std::size_t w = dtype_size(t);
  std::vector<std::uint8_t> out(v.size() * w);
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint8_t* p = out.data() + i * w;
    switch (t) {
      case dtype::f32: put<float>(p, v[i]); break;
      case dtype::f64: put<double>(p, v[i]); break;
      case dtype::f16: put<half>(p, v[i]); break;
      case dtype::bf16: put<bfloat16>(p, v[i]); break;
      case dtype::i32: put<std::int32_t>(p, v[i]); break;
      case dtype::i64: put<std::int64_t>(p, v[i]); break;
    }
  }
  return out;
}

std::vector<double> decode(dtype t, const std::vector<std::uint8_t>& bytes) {
  const std::size_t w = dtype_size(t);
  std::vector<double> v(bytes.size() / w);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::uint8_t* p = bytes.data() + i * w;
    switch (t) {
      case dtype::f32: v[i] = get<float>(p); break;
      case dtype::f64: v[i] = get<double>(p); break;
      case dtype::f16: v[i] = get<half>(p); break;
      case dtype::bf16: v[i] = get<bfloat16>(p); break;
      case dtype::i32: v[i] = get<std::int32_t>(p); break;
      case dtype::i64: v[i] = get<std::int64_t>(p); break;
    }
  }
  return v;
}

bool is_int(dtype t) { return t == dtype::i32 || t == dtype::i64; }

// The host's reduction of one element over the ranks' values.
double reduce(ReduceOp op, dtype t, const std::vector<double>& by_rank) {
  double r = by_rank[0];
  for (std::size_t i = 1; i < by_rank.size(); ++i) {
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg: r += by_rank[i]; break;
      case ReduceOp::max: r = std::max(r, by_rank[i]); break;
      case ReduceOp::min: r = std::min(r, by_rank[i]); break;
    }
  }
  if (op != ReduceOp::avg) return r;
  const double avg = r / static_cast<double>(by_rank.size());
  return is_int(t) ? std::trunc(avg) : avg;
}

// Only avg of floating types rounds: within a few units of the type's
// precision at the inputs' scale (|x| <= 8).
double tolerance(ReduceOp op, dtype t) {
  if (op != ReduceOp::avg) return 0.0;
  switch (t) {
    case dtype::f64: return 1e-12;
    case dtype::f32: return 1e-5;
    case dtype::f16: return 2e-2;
    case dtype::bf16: return 1e-1;
    default: return 0.0;
  }
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::abs(got[i] - want[i]) <= tol) continue;
    if (bad++ < 3) ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", the host computes " << want[i];
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements differ";
}

// -- device memory through the CUDA backend (no CUDA header needed) ------------------

class DeviceBytes {
 public:
  DeviceBytes(std::size_t bytes, int device)
      : bytes_(bytes), device_(device), p_(cuda_backend().allocate(bytes > 0 ? bytes : 1, device)) {}
  explicit DeviceBytes(const std::vector<std::uint8_t>& host, int device) : DeviceBytes(host.size(), device) {
    if (bytes_ > 0) cuda_backend().copy(p_, host.data(), bytes_, CopyKind::HostToDevice, device_);
  }
  ~DeviceBytes() { cuda_backend().deallocate(p_, bytes_ > 0 ? bytes_ : 1, device_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;

  std::vector<std::uint8_t> download() const {
    std::vector<std::uint8_t> host(bytes_);
    if (bytes_ > 0) cuda_backend().copy(host.data(), p_, bytes_, CopyKind::DeviceToHost, device_);
    return host;
  }
  Buffer buffer(std::size_t count, dtype t) { return {p_, count, t, Place::device}; }
  ConstBuffer cbuffer(std::size_t count, dtype t) const { return {p_, count, t, Place::device}; }

 private:
  std::size_t bytes_;
  int device_;
  void* p_;
};

const ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min};
const std::size_t kCounts[] = {1, 1000, 65537};  // one element, a small bucket, an odd large one

std::string label(const char* op, dtype t, std::size_t n) {
  return std::string(op) + " " + dtype_name(t) + " x " + std::to_string(n);
}

class Nccl : public ::testing::TestWithParam<dtype> {
 protected:
  void SetUp() override {
    if (!g_skip.empty()) GTEST_SKIP() << g_skip;
    ASSERT_TRUE(g_comm) << "joining the NCCL communicator failed: " << g_join_error;
    R = g_comm->size();
    me = g_comm->rank();
    dev = g_comm->device();
    t = GetParam();
  }
  NcclCommunicator& comm() { return *g_comm; }
  // Every rank's input for case `salt`.
  std::vector<std::vector<double>> inputs(std::size_t n, std::uint64_t salt) const {
    std::vector<std::vector<double>> all;
    for (int r = 0; r < R; ++r) all.push_back(input(n, r, salt));
    return all;
  }
  int R = 1, me = 0, dev = 0;
  dtype t = dtype::f32;
};

}  // namespace

TEST_P(Nccl, AllreduceMatchesTheHost) {
  std::uint64_t salt = 1;
  for (ReduceOp op : kOps) {
    for (std::size_t n : kCounts) {
      const auto all = inputs(n, salt++);
      DeviceBytes buf(encode(t, all[me]), dev);
      comm().allreduce(buf.buffer(n, t), op);
      std::vector<double> want(n);
      for (std::size_t i = 0; i < n; ++i) {
        std::vector<double> col;
        for (int r = 0; r < R; ++r) col.push_back(all[r][i]);
        want[i] = decode(t, encode(t, {reduce(op, t, col)}))[0];  // the host result, rounded to the dtype
      }
      expect_near_all(decode(t, buf.download()), want, tolerance(op, t),
                      label("allreduce", t, n) + " " + reduce_op_name(op));
      if (R == 1) {  // one rank: LocalCommunicator on the host must agree
        auto host = encode(t, all[me]);
        LocalCommunicator local;
        local.allreduce({host.data(), n, t, Place::host}, op);
        expect_near_all(decode(t, buf.download()), decode(t, host), tolerance(op, t), "against LocalCommunicator");
      }
    }
  }
}

TEST_P(Nccl, BroadcastFromEveryRoot) {
  for (int root = 0; root < R; ++root) {
    const std::size_t n = 1000;
    const auto all = inputs(n, 100 + static_cast<std::uint64_t>(root));
    DeviceBytes buf(encode(t, all[me]), dev);
    comm().broadcast(buf.buffer(n, t), root);
    expect_near_all(decode(t, buf.download()), all[root], 0.0,
                    label("broadcast", t, n) + " root " + std::to_string(root));
  }
}

TEST_P(Nccl, ReduceScatterMatchesTheHost) {
  std::uint64_t salt = 200;
  for (ReduceOp op : kOps) {
    const std::size_t n = 513;  // per rank
    const auto all = inputs(n * static_cast<std::size_t>(R), salt++);
    DeviceBytes send(encode(t, all[me]), dev);
    DeviceBytes recv(n * dtype_size(t), dev);
    comm().reduce_scatter(send.cbuffer(n * R, t), recv.buffer(n, t), op);
    std::vector<double> want(n);
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<double> col;
      for (int r = 0; r < R; ++r) col.push_back(all[r][static_cast<std::size_t>(me) * n + i]);
      want[i] = decode(t, encode(t, {reduce(op, t, col)}))[0];
    }
    expect_near_all(decode(t, recv.download()), want, tolerance(op, t),
                    label("reduce_scatter", t, n) + " " + reduce_op_name(op));
  }
}

TEST_P(Nccl, AllgatherConcatenatesInRankOrder) {
  const std::size_t n = 777;
  const auto all = inputs(n, 300);
  DeviceBytes send(encode(t, all[me]), dev);
  DeviceBytes recv(n * R * dtype_size(t), dev);
  comm().allgather(send.cbuffer(n, t), recv.buffer(n * R, t));
  std::vector<double> want;
  for (int r = 0; r < R; ++r) want.insert(want.end(), all[r].begin(), all[r].end());
  expect_near_all(decode(t, recv.download()), want, 0.0, label("allgather", t, n));
}

TEST_P(Nccl, GatherAtEveryRoot) {
  for (int root = 0; root < R; ++root) {
    const std::size_t n = 300;
    const auto all = inputs(n, 400 + static_cast<std::uint64_t>(root));
    DeviceBytes send(encode(t, all[me]), dev);
    DeviceBytes recv(n * R * dtype_size(t), dev);
    comm().gather(send.cbuffer(n, t), me == root ? recv.buffer(n * R, t) : Buffer{nullptr, 0, t, Place::device}, root);
    if (me != root) continue;
    std::vector<double> want;
    for (int r = 0; r < R; ++r) want.insert(want.end(), all[r].begin(), all[r].end());
    expect_near_all(decode(t, recv.download()), want, 0.0, label("gather", t, n) + " root " + std::to_string(root));
  }
}

TEST_P(Nccl, ScatterFromEveryRoot) {
  for (int root = 0; root < R; ++root) {
    const std::size_t n = 300;
    const auto all = inputs(n * static_cast<std::size_t>(R), 500 + static_cast<std::uint64_t>(root));
    DeviceBytes send(encode(t, all[me]), dev);
    DeviceBytes recv(n * dtype_size(t), dev);
    comm().scatter(me == root ? send.cbuffer(n * R, t) : ConstBuffer{nullptr, 0, t, Place::device}, recv.buffer(n, t),
                   root);
    const std::vector<double> want(all[root].begin() + static_cast<std::ptrdiff_t>(me * n),
                                   all[root].begin() + static_cast<std::ptrdiff_t>((me + 1) * n));
    expect_near_all(decode(t, recv.download()), want, 0.0, label("scatter", t, n) + " root " + std::to_string(root));
  }
}

TEST_P(Nccl, ReduceWritesOnlyTheRoot) {
  std::uint64_t salt = 600;
  for (int root = 0; root < R; ++root) {
    for (ReduceOp op : kOps) {
      const std::size_t n = 1000;
      const auto all = inputs(n, salt++);
      DeviceBytes buf(encode(t, all[me]), dev);
      comm().reduce(buf.buffer(n, t), op, root);
      std::vector<double> want = all[me];  // others' buffers are unchanged
      if (me == root) {
        for (std::size_t i = 0; i < n; ++i) {
          std::vector<double> col;
          for (int r = 0; r < R; ++r) col.push_back(all[r][i]);
          want[i] = decode(t, encode(t, {reduce(op, t, col)}))[0];
        }
      }
      expect_near_all(decode(t, buf.download()), want, me == root ? tolerance(op, t) : 0.0,
                      label("reduce", t, n) + " " + reduce_op_name(op) + " root " + std::to_string(root));
    }
  }
}

TEST_P(Nccl, SendRecvAroundARing) {
  const std::size_t n = 4099;
  const auto all = inputs(n, 700);
  if (R == 1) {
    DeviceBytes buf(encode(t, all[me]), dev);
    EXPECT_THROW(comm().isend(buf.cbuffer(n, t), 0, 0), ValueError) << "a send to oneself must be refused";
    return;
  }
  const int next = (me + 1) % R, prev = (me + R - 1) % R;
  DeviceBytes send(encode(t, all[me]), dev);
  DeviceBytes recv(n * dtype_size(t), dev);
  // As an MPI ring step is written: every rank sends first, then receives.
  // Launched one by one on a stream, each send would wait for a receive
  // queued behind its peer's send; the communicator launches them together.
  std::vector<RequestPtr> reqs;
  reqs.push_back(comm().isend(send.cbuffer(n, t), next, 5));
  reqs.push_back(comm().irecv(recv.buffer(n, t), prev, 5));
  wait_all(reqs);
  expect_near_all(decode(t, recv.download()), all[prev], 0.0, label("ring: recv from the previous rank", t, n));

  // The opposite order on odd ranks, waiting for the receive first.
  DeviceBytes back(n * dtype_size(t), dev);
  RequestPtr s2, r2;
  if (me % 2 == 0) {
    s2 = comm().isend(send.cbuffer(n, t), prev, 6);
    r2 = comm().irecv(back.buffer(n, t), next, 6);
  } else {
    r2 = comm().irecv(back.buffer(n, t), next, 6);
    s2 = comm().isend(send.cbuffer(n, t), prev, 6);
  }
  r2->wait();
  s2->wait();
  expect_near_all(decode(t, back.download()), all[next], 0.0, label("reverse ring: recv from the next rank", t, n));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Nccl,
                         ::testing::Values(dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::i32, dtype::i64),
                         [](const ::testing::TestParamInfo<dtype>& i) { return std::string(dtype_name(i.param)); });

// -- not per dtype ------------------------------------------------------------------------

class NcclOnce : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!g_skip.empty()) GTEST_SKIP() << g_skip;
    ASSERT_TRUE(g_comm) << "joining the NCCL communicator failed: " << g_join_error;
  }
};

TEST_F(NcclOnce, OverlappedRequestsCompleteInAnyOrder) {
  NcclCommunicator& c = *g_comm;
  const std::size_t n = 1 << 16;
  std::vector<std::unique_ptr<DeviceBytes>> bufs;
  std::vector<RequestPtr> reqs;
  std::vector<std::vector<std::vector<double>>> all;
  for (int k = 0; k < 4; ++k) {
    std::vector<std::vector<double>> in;
    for (int r = 0; r < c.size(); ++r) in.push_back(input(n, r, 800 + static_cast<std::uint64_t>(k)));
    bufs.push_back(std::make_unique<DeviceBytes>(encode(dtype::f32, in[c.rank()]), c.device()));
    reqs.push_back(c.iallreduce(bufs.back()->buffer(n, dtype::f32), ReduceOp::sum));
    all.push_back(std::move(in));
  }
  for (int k = 3; k >= 0; --k) reqs[k]->wait();  // newest first
  for (int k = 0; k < 4; ++k) {
    EXPECT_TRUE(reqs[k]->test());
    std::vector<double> want(n, 0.0);
    for (int r = 0; r < c.size(); ++r)
      for (std::size_t i = 0; i < n; ++i) want[i] += all[k][r][i];
    expect_near_all(decode(dtype::f32, bufs[k]->download()), want, 0.0, "overlapped allreduce " + std::to_string(k));
  }
  c.barrier();
}

TEST_F(NcclOnce, HostBuffersNameTheMpiCommunicator) {
  std::vector<float> host(8, 1.0f);
  try {
    g_comm->allreduce(host_buffer(host.data(), host.size()), ReduceOp::sum);
    FAIL() << "a host buffer was accepted";
  } catch (const NotSupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("MPI communicator"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(g_comm->supports(Place::host));
  EXPECT_TRUE(g_comm->supports(Place::device));
  EXPECT_EQ(g_comm->backend(), "nccl");
}

TEST_F(NcclOnce, HostMemoryMarkedDeviceIsRefused) {
  std::vector<float> host(8, 1.0f);
  EXPECT_THROW(g_comm->allreduce({host.data(), host.size(), dtype::f32, Place::device}, ReduceOp::sum), ValueError);
}

// These break only their own communicators (fresh ones, joined here), not
// the one the other cases share.
TEST_F(NcclOnce, WatchdogNamesStepOperationAndBytes) {
  if (g_comm->size() < 2) GTEST_SKIP() << "one rank cannot miss a collective";
  NcclCommunicator::Options o;
  o.timeout = std::chrono::milliseconds(1500);
  NcclCommunicator c(MPI_COMM_WORLD, o);
  const std::size_t n = 4096;
  DeviceBytes buf(encode(dtype::f32, input(n, c.rank(), 900)), c.device());
  c.set_step(42);
  // Only rank 0 calls: any NCCL call on another rank would be matched with
  // this allreduce, so the others stay out of NCCL until rank 0 has given up.
  if (c.rank() == 0) {
    const auto start = std::chrono::steady_clock::now();
    try {
      c.allreduce(buf.buffer(n, dtype::f32), ReduceOp::sum);
      FAIL() << "an allreduce that the other ranks skipped completed";
    } catch (const CommError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("watchdog"), std::string::npos) << m;
      EXPECT_NE(m.find("allreduce"), std::string::npos) << m;
      EXPECT_NE(m.find("step 42"), std::string::npos) << m;
      EXPECT_NE(m.find(std::to_string(n * 4) + " bytes"), std::string::npos) << m;
      const std::string missing = c.size() == 2 ? "rank 1 has not reached it" : "have not reached it";
      EXPECT_NE(m.find(missing), std::string::npos) << m;
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_GE(waited, std::chrono::milliseconds(1500));
    EXPECT_LT(waited, std::chrono::milliseconds(15000)) << "the watchdog fired far later than its timeout";
    // The communicator is aborted: every later call says so at once.
    try {
      c.barrier();
      FAIL() << "an aborted communicator ran a barrier";
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find("aborted"), std::string::npos) << e.what();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (c.rank() != 0) {
    // Rank 0's failure notice reaches the others at their next call.
    try {
      c.barrier();
      FAIL() << "a barrier completed after rank 0 had failed";
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find("rank 0 reported"), std::string::npos) << e.what();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_F(NcclOnce, MismatchedCountsAreNamedOnEveryRank) {
  if (g_comm->size() < 2) GTEST_SKIP() << "one rank cannot disagree with itself";
  NcclCommunicator::Options o;
  o.timeout = std::chrono::milliseconds(5000);
  NcclCommunicator c(MPI_COMM_WORLD, o);
  const std::size_t n = 1000 + static_cast<std::size_t>(c.rank() == 1);  // rank 1 asks for one more
  DeviceBytes buf(encode(dtype::f32, input(n, c.rank(), 950)), c.device());
  c.set_step(7);
  try {
    c.allreduce(buf.buffer(n, dtype::f32), ReduceOp::sum);
    FAIL() << "an allreduce of 1000 and 1001 elements completed";
  } catch (const CommError& e) {
    const std::string m = e.what();
    EXPECT_TRUE(m.find("mismatch") != std::string::npos || m.find("reported") != std::string::npos) << m;
    EXPECT_TRUE(m.find("1001 x float32") != std::string::npos || m.find("reported") != std::string::npos) << m;
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(NcclNoGpu, JoiningAndTheFactoryThrowDeviceErrorSayingWhy) {
  if (has_cuda_device()) GTEST_SKIP() << "a GPU is present; this checks the message given without one";
  try {
    (void)make_nccl_communicator(std::chrono::milliseconds(1000));
    FAIL() << "an NCCL communicator was made without a GPU";
  } catch (const DeviceError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("needs a GPU"), std::string::npos) << m;
    EXPECT_NE(m.find(cuda_unavailable_reason()), std::string::npos) << m;
  }
  EXPECT_THROW(NcclCommunicator c(MPI_COMM_WORLD), DeviceError);
  try {
    (void)make_communicator("nccl");
    FAIL() << "the factory made an NCCL communicator without a GPU";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("needs a GPU"), std::string::npos) << e.what();
  }
  const int v = NcclCommunicator::library_version();
  EXPECT_GE(v, 20000) << "NCCL 2.x reports a version code of at least 20000";
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  if (!has_cuda_device()) {
    g_skip = "no GPU: " + cuda_unavailable_reason();
  } else {
    const int gpus = cuda_backend().device_count();
    const char* shared = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
    const bool may_share = NcclCommunicator::library_version() >= 23000 && shared != nullptr && shared[0] == '1';
    if (gpus < size && !may_share) {
      g_skip = std::to_string(size) + " ranks but " + std::to_string(gpus) + " GPU(s): NCCL " +
               std::to_string(NcclCommunicator::library_version()) +
               " refuses two ranks on one GPU (2.30 and later allow it with NCCL_MULTI_RANK_GPU_ENABLE=1)";
    }
  }
  if (g_skip.empty()) {
    try {
      g_comm = std::make_unique<NcclCommunicator>(MPI_COMM_WORLD);
    } catch (const std::exception& e) {
      g_join_error = e.what();
    }
  } else if (rank == 0) {
    std::cout << "[magmadnn] NCCL tests skipped on " << size << " rank(s): " << g_skip << "\n";
  }

  int rc = RUN_ALL_TESTS();
  g_comm.reset();  // before MPI_Finalize
  MPI_Finalize();
  if (rc == 0 && !g_skip.empty()) rc = 77;
  return rc;
}
