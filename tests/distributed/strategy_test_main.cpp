// main() of the strategy tests: one world communicator shared by the tests
// (make_communicator("auto"): MPI under a launcher, else one local rank);
// every rank runs every test; rank 0 prints the report, the others only
// their failures, prefixed with the rank.
#include <gtest/gtest.h>

#include <cstdio>

#include "strategy_test_util.h"

namespace {

std::shared_ptr<magmadnn::distributed::Communicator> g_world;

class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::printf("[rank %d] FAILED at %s:%d\n%s\n", rank_, r.file_name() ? r.file_name() : "?", r.line_number(),
                  r.summary());
  }

 private:
  int rank_;
};

}  // namespace

std::shared_ptr<magmadnn::distributed::Communicator> strategy_world() { return g_world; }

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  g_world = stest::make_world();
  // Long enough for an oversubscribed CI machine, short enough for ctest's TIMEOUT.
  g_world->set_timeout(std::chrono::seconds(30));
  if (g_world->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(g_world->rank()));
  }
  const int rc = RUN_ALL_TESTS();
  g_world.reset();
  return rc;
}
