// main() of the dMath tests: one world communicator shared by the tests
// (make_communicator("auto"): MPI under a launcher, else one local rank).
// Every rank runs every test; rank 0 prints the report, the others only
// their failures, prefixed with the rank.
#include <gtest/gtest.h>

#include <cstdio>

#include "dmath_test_util.h"
#include "magmadnn/distributed/communicator_factory.h"

namespace {

std::unique_ptr<magmadnn::distributed::Communicator> g_world;

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

magmadnn::distributed::Communicator& dmath_world() { return *g_world; }

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  g_world = magmadnn::distributed::make_communicator("auto");
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
