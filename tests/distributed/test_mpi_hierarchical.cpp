// The hierarchical allreduce (comm/hierarchical_communicator.h) against the
// flat one: every dtype and ReduceOp, several buckets in flight completing
// in any order, hosts forced by name (rank / 2: 2 x 2 at 4 ranks, 2 + 1 at
// 3) and found by shared memory, and the automatic choice. Run at 3 and 4
// ranks on one machine, and at 2 x 2 across network namespaces, where
// MAGMADNN_TEST_EXPECT_HOSTS=2 says the shared-memory groups must be the
// namespaces.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "magmadnn/comm/hierarchical_communicator.h"
#include "magmadnn/core/half.h"
#include "mpi_world.h"

namespace {

using namespace magmadnn;
using namespace magmadnn::distributed;

std::shared_ptr<Communicator> shared_world() { return {&world(), [](Communicator*) {}}; }

// Ranks 2k and 2k + 1 share host "h<k>".
std::string paired_host() { return "h" + std::to_string(world().rank() / 2); }

std::shared_ptr<HierarchicalCommunicator> paired() {
  return std::make_shared<HierarchicalCommunicator>(shared_world(), host_layout(world(), paired_host()));
}

template <typename T>
std::vector<T> random_values(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed * 7919u + static_cast<unsigned>(world().rank()));
  std::uniform_int_distribution<int> ints(-1000, 1000);
  std::uniform_real_distribution<double> reals(-1.0, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = std::is_integral_v<T> ? T(ints(gen)) : T(reals(gen));
  return v;
}

template <typename T>
double tolerance() {
  if constexpr (std::is_integral_v<T>) return 0.0;
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) return 0.05;
  if constexpr (std::is_same_v<T, float>) return 1e-5;
  return 1e-12;
}

template <typename T>
class Hierarchical : public ::testing::Test {};
using Dtypes = ::testing::Types<float, double, std::int32_t, std::int64_t, half, bfloat16>;
TYPED_TEST_SUITE(Hierarchical, Dtypes);

TYPED_TEST(Hierarchical, EqualsFlatForEveryOp) {
  using T = TypeParam;
  auto h = paired();
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
    const std::vector<T> input = random_values<T>(1000, static_cast<unsigned>(op) + 1);
    std::vector<T> flat = input, hier = input;
    world().allreduce(host_buffer(flat.data(), flat.size()), op);
    h->allreduce(host_buffer(hier.data(), hier.size()), op);
    const bool exact = op == ReduceOp::max || op == ReduceOp::min;
    for (std::size_t i = 0; i < input.size(); ++i) {
      const double a = static_cast<double>(flat[i]), b = static_cast<double>(hier[i]);
      ASSERT_NEAR(a, b, exact ? 0.0 : tolerance<T>() * (1.0 + std::abs(a)))
          << reduce_op_name(op) << " element " << i << " on rank " << world().rank();
    }
  }
}

// Buckets of several sizes in flight together, waited in reverse order,
// then tested in a loop as the strategies do: each equals its flat result.
TEST(Hierarchical, BucketsInFlightCompleteInAnyOrder) {
  auto h = paired();
  const std::vector<std::size_t> sizes{1, 1000, 17, 65536, 3, 4096};
  std::vector<std::vector<float>> flat, hier;
  for (std::size_t b = 0; b < sizes.size(); ++b) {
    flat.push_back(random_values<float>(sizes[b], 100 + static_cast<unsigned>(b)));
    hier.push_back(flat.back());
  }
  for (int round = 0; round < 2; ++round) {
    std::vector<RequestPtr> reqs;
    for (auto& v : hier) reqs.push_back(h->iallreduce(host_buffer(v.data(), v.size()), ReduceOp::sum));
    if (round == 0) {
      for (std::size_t b = reqs.size(); b-- > 0;) reqs[b]->wait();
    } else {
      std::size_t done = 0;
      std::vector<bool> finished(reqs.size(), false);
      while (done < reqs.size()) {
        for (std::size_t b = 0; b < reqs.size(); ++b) {
          if (!finished[b] && reqs[b]->test()) finished[b] = true, ++done;
        }
      }
    }
    for (auto& v : flat) world().allreduce(host_buffer(v.data(), v.size()), ReduceOp::sum);
    for (std::size_t b = 0; b < sizes.size(); ++b) {
      for (std::size_t i = 0; i < sizes[b]; ++i) {
        ASSERT_NEAR(flat[b][i], hier[b][i], 1e-4f * (1.0f + std::abs(flat[b][i])))
            << "round " << round << " bucket " << b << " element " << i;
      }
    }
  }
}

TEST(Hierarchical, NamedHostsGiveThePairedLayout) {
  const HostLayout layout = host_layout(world(), paired_host());
  const int p = world().size();
  ASSERT_EQ(layout.leader.size(), static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) EXPECT_EQ(layout.leader[static_cast<std::size_t>(r)], r / 2 * 2);
  EXPECT_EQ(layout.hosts(), (p + 1) / 2);
  if (p == 4) EXPECT_EQ(layout.describe(), "2 hosts (2 + 2 ranks)");
  if (p == 3) EXPECT_EQ(layout.describe(), "2 hosts (2 + 1 ranks)");
  auto h = paired();
  EXPECT_EQ(h->leader(), world().rank() % 2 == 0);
  EXPECT_EQ(h->size(), p);
  EXPECT_EQ(h->rank(), world().rank());
}

// Without names: MPI_Comm_split_type's groups. One mpirun on one machine is
// one node; across namespaces (MAGMADNN_TEST_EXPECT_HOSTS) each is a node.
TEST(Hierarchical, SharedMemoryGroupsAreTheNodes) {
  const char* expect = std::getenv("MAGMADNN_TEST_EXPECT_HOSTS");
  const int hosts = expect != nullptr ? std::atoi(expect) : 1;
  const HostLayout layout = host_layout(world());
  EXPECT_EQ(layout.hosts(), hosts) << layout.describe();
  const std::string mode = hosts > 1 && layout.largest_host() > 1 ? "hierarchical" : "flat";
  auto chosen = allreduce_communicator(shared_world(), "auto");
  EXPECT_EQ(chosen.get() != &world(), mode == "hierarchical") << "auto chose wrongly for " << layout.describe();
  // Whatever it chose, its allreduce is the flat one's.
  std::vector<double> a = random_values<double>(333, 9), b = a;
  chosen->allreduce(host_buffer(a.data(), a.size()), ReduceOp::avg);
  world().allreduce(host_buffer(b.data(), b.size()), ReduceOp::avg);
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-12);
}

TEST(Hierarchical, AutoFollowsMagmadnnHost) {
  setenv("MAGMADNN_HOST", paired_host().c_str(), 1);
  auto chosen = allreduce_communicator(shared_world(), "auto");
  auto forced = allreduce_communicator(shared_world(), "hierarchical");
  auto flat = allreduce_communicator(shared_world(), "flat");
  unsetenv("MAGMADNN_HOST");
  const bool spans = world().size() > 2;  // 2 ranks: one host, nothing to gain
  EXPECT_EQ(dynamic_cast<HierarchicalCommunicator*>(chosen.get()) != nullptr, spans);
  EXPECT_NE(dynamic_cast<HierarchicalCommunicator*>(forced.get()), nullptr);
  EXPECT_EQ(flat.get(), &world());
  EXPECT_THROW(allreduce_communicator(shared_world(), "tree"), ValueError);
}

TEST(Hierarchical, SomeRanksNamingAHostIsRefusedOnEveryRank) {
  if (world().size() < 2) GTEST_SKIP() << "needs two ranks";
  if (world().rank() == 0) setenv("MAGMADNN_HOST", "alone", 1);
  try {
    host_layout(world());
    ADD_FAILURE() << "no ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("1 of " + std::to_string(world().size()) + " ranks name their host"),
              std::string::npos)
        << e.what();
  }
  unsetenv("MAGMADNN_HOST");
}

}  // namespace
