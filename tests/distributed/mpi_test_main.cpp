// main() of the MPI communicator tests: one world communicator shared by the
// tests, every rank runs every test; rank 0 prints the usual report, other
// ranks print only their failures (prefixed with the rank).
#include <gtest/gtest.h>

#include <cstdio>

#include "mpi_world.h"

namespace {

magmadnn::distributed::MpiCommunicator* g_world = nullptr;

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

magmadnn::distributed::MpiCommunicator& world() { return *g_world; }

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  magmadnn::distributed::MpiCommunicator comm;
  // Long enough for an oversubscribed CI machine, short enough for ctest's TIMEOUT.
  comm.set_timeout(std::chrono::seconds(20));
  g_world = &comm;
  if (comm.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(comm.rank()));
  }
  const int rc = RUN_ALL_TESTS();
  g_world = nullptr;
  return rc;
}
