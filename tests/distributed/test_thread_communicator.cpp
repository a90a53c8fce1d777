// ThreadCommunicator (comm/thread_communicator.h): every operation against
// closed forms (element i of rank r is r + 1 + i % 7, as the MPI tests use),
// the mismatch check, the watchdog and report_failure.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "magmadnn/comm/thread_communicator.h"
#include "magmadnn/core/half.h"

namespace {

using namespace magmadnn;
using namespace magmadnn::distributed;
using namespace std::chrono_literals;

template <typename T>
ConstBuffer cbuf(const T* data, std::size_t n) {
  return host_buffer(data, n);
}

double value(int r, std::size_t i) { return r + 1 + static_cast<double>(i % 7); }

// Runs body(comm) on `n` threads, one rank each; each rank's error text
// ("" when it returned).
std::vector<std::string> on_ranks(int n, const std::function<void(ThreadCommunicator&)>& body,
                                  std::chrono::milliseconds timeout = 10s) {
  auto comms = make_thread_group(n);
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ThreadCommunicator& c = *comms[static_cast<std::size_t>(r)];
      c.set_timeout(timeout);
      try {
        body(c);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

void expect_no_errors(const std::vector<std::string>& errors) {
  for (std::size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

template <typename T>
class ThreadCollectives : public ::testing::Test {};
using Dtypes = ::testing::Types<float, double, std::int32_t, std::int64_t, half, bfloat16>;
TYPED_TEST_SUITE(ThreadCollectives, Dtypes);

TYPED_TEST(ThreadCollectives, AllreduceEveryOp) {
  using T = TypeParam;
  constexpr int p = 3;
  constexpr std::size_t n = 37;
  expect_no_errors(on_ranks(p, [&](ThreadCommunicator& c) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::avg}) {
      std::vector<T> v(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = T(value(c.rank(), i));
      c.allreduce(host_buffer(v.data(), n), op);
      for (std::size_t i = 0; i < n; ++i) {
        const double sum = p * (p + 1) / 2.0 + p * static_cast<double>(i % 7);
        double want = op == ReduceOp::sum   ? sum
                      : op == ReduceOp::max ? value(p - 1, i)
                      : op == ReduceOp::min ? value(0, i)
                                            : sum / p;
        if (std::is_integral_v<T>) want = static_cast<double>(static_cast<std::int64_t>(want));
        ASSERT_NEAR(static_cast<double>(v[i]), want, std::is_integral_v<T> ? 0.0 : 0.02 * want)
            << reduce_op_name(op) << " element " << i;
      }
    }
  }));
}

TEST(ThreadCommunicator, EveryOtherCollectiveOnFourRanks) {
  constexpr int p = 4;
  constexpr std::size_t n = 5;
  expect_no_errors(on_ranks(p, [&](ThreadCommunicator& c) {
    const int r = c.rank();
    std::vector<double> mine(n), all(n * p);
    for (std::size_t i = 0; i < n; ++i) mine[i] = value(r, i);
    c.allgather(cbuf(mine.data(), n), host_buffer(all.data(), all.size()));
    for (int q = 0; q < p; ++q) ASSERT_EQ(all[static_cast<std::size_t>(q) * n + 2], value(q, 2));

    std::vector<double> piece(n);  // reduce_scatter: rank r sums block r of every rank's `all`
    c.reduce_scatter(cbuf(all.data(), all.size()), host_buffer(piece.data(), n), ReduceOp::sum);
    ASSERT_EQ(piece[1], p * value(r, 1));

    std::vector<double> gathered(r == 2 ? n * p : 0);
    c.gather(cbuf(mine.data(), n), host_buffer(gathered.data(), gathered.size()), 2);
    if (r == 2) ASSERT_EQ(gathered, all);

    std::vector<double> part(n);
    c.scatter(cbuf(all.data(), all.size()), host_buffer(part.data(), n), 1);
    ASSERT_EQ(part, std::vector<double>(all.begin() + r * n, all.begin() + (r + 1) * n));

    std::vector<double> b(mine);
    c.broadcast(host_buffer(b.data(), n), 3);
    ASSERT_EQ(b[0], value(3, 0));

    std::vector<double> red(mine);
    c.reduce(host_buffer(red.data(), n), ReduceOp::max, 0);
    ASSERT_EQ(red[4], r == 0 ? value(p - 1, 4) : value(r, 4)) << "only the root's buffer changes";
    c.barrier();
    ASSERT_EQ(c.collectives(), 7);
  }));
}

TEST(ThreadCommunicator, TaggedMessagesMatchByTagInAnyOrder) {
  expect_no_errors(on_ranks(2, [](ThreadCommunicator& c) {
    if (c.rank() == 0) {
      std::int64_t a = 11, b = 22;
      c.send(cbuf(&a, 1), 1, /*tag=*/5);
      c.send(cbuf(&b, 1), 1, /*tag=*/9);
    } else {
      std::int64_t a = 0, b = 0;
      RequestPtr rb = c.irecv(host_buffer(&b, 1), 0, 9);
      c.recv(host_buffer(&a, 1), 0, 5);
      rb->wait();
      ASSERT_EQ(a, 11);
      ASSERT_EQ(b, 22);
      std::int64_t none = 0;
      EXPECT_FALSE(c.irecv(host_buffer(&none, 1), 0, 7)->test()) << "nothing was sent with tag 7";
    }
  }));
}

TEST(ThreadCommunicator, RanksThatDisagreeOnACollectiveAllFailNamingBothViews) {
  const auto errors = on_ranks(3, [](ThreadCommunicator& c) {
    c.set_step(12);
    std::vector<float> v(c.rank() == 1 ? 8 : 6, 1.0f);
    c.allreduce(host_buffer(v.data(), v.size()), ReduceOp::sum);
  });
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("disagree on a collective at step 12"), std::string::npos) << e;
    EXPECT_NE(e.find("rank 0: allreduce of 6 float32 (sum); rank 1: allreduce of 8 float32 (sum)"), std::string::npos) << e;
  }
}

TEST(ThreadCommunicator, TheWatchdogNamesTheRankThatNeverCame) {
  const auto errors = on_ranks(
      3,
      [](ThreadCommunicator& c) {
        if (c.rank() == 1) return;  // leaves without the collective
        double x = 1.0;
        c.set_step(4);
        c.allreduce(host_buffer(&x, 1), ReduceOp::sum);
      },
      200ms);
  EXPECT_EQ(errors[1], "");
  for (int r : {0, 2}) {
    const std::string& e = errors[static_cast<std::size_t>(r)];
    EXPECT_NE(e.find("for allreduce (8 bytes, step 4); rank(s) 1 never came (watchdog)"), std::string::npos) << e;
  }
}

TEST(ThreadCommunicator, AReceiveWhoseSendNeverComesTimesOut) {
  const auto errors = on_ranks(
      2,
      [](ThreadCommunicator& c) {
        if (c.rank() == 1) return;
        float x = 0;
        c.recv(host_buffer(&x, 1), 1, 3);
      },
      150ms);
  EXPECT_NE(errors[0].find("recv from rank 1 with tag 3 (4 bytes); rank 1 never sent it"), std::string::npos)
      << errors[0];
}

TEST(ThreadCommunicator, AReportedFailureStopsTheRanksWaitingForIt) {
  const auto start = std::chrono::steady_clock::now();
  const auto errors = on_ranks(2, [](ThreadCommunicator& c) {
    if (c.rank() == 1) {
      c.report_failure("the loss went NaN");
      return;
    }
    double x = 1.0;
    c.allreduce(host_buffer(&x, 1), ReduceOp::sum);
  });
  EXPECT_NE(errors[0].find("rank 1 stopped: the loss went NaN"), std::string::npos) << errors[0];
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "rank 0 heard at once, not from its 10 s watchdog";
}

TEST(ThreadCommunicator, SumsAreTheSameBitsAsAddingTheRanksInOrder) {
  constexpr int p = 4;
  const std::vector<float> x = {1e8f, 1.0f, -1e8f, 1.0f};  // float addition in any other order differs
  std::vector<float> got(p);
  expect_no_errors(on_ranks(p, [&](ThreadCommunicator& c) {
    float v = x[static_cast<std::size_t>(c.rank())];
    c.allreduce(host_buffer(&v, 1), ReduceOp::sum);
    got[static_cast<std::size_t>(c.rank())] = v;
  }));
  double want = 0;
  for (float v : x) want += v;
  for (float g : got) EXPECT_EQ(g, static_cast<float>(want));
}

TEST(ThreadCommunicator, RefusesDeviceBuffersAndMissingRanks) {
  auto comms = make_thread_group(2);
  float x = 0;
  Buffer dev{&x, 1, dtype::f32, Place::device};
  EXPECT_THROW(comms[0]->allreduce(dev, ReduceOp::sum), NotSupportedError);
  EXPECT_THROW(comms[0]->send(cbuf(&x, 1), 2, 0), ValueError);
  EXPECT_THROW(make_thread_group(0), ValueError);
}

}  // namespace
