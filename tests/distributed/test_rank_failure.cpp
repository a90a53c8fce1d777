// A rank that stops training with an error tells the others
// (Communicator::report_failure, called by TrainingRun): each stops at its
// next wait with a CommError that quotes the reason, within seconds, not
// when its watchdog fires (60 s here) naming only a timeout.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "distributed/strategy_test_util.h"
#include "magmadnn/core/config.h"
#include "magmadnn/run/run_training.h"
#include "support/run_fixtures.h"

#if defined(MAGMADNN_HAVE_MPI)
#include "magmadnn/comm/mpi/mpi_communicator.h"
#endif

std::shared_ptr<magmadnn::distributed::Communicator> strategy_world();

namespace {
using namespace magmadnn;

// The last rank's callback throws after its third step; every rank's run
// must end with an error naming that reason.
TEST(RankFailure, ACallbackThatThrowsOnOneRankStopsEveryRankWithItsReason) {
#if !defined(MAGMADNN_HAVE_MPI)
  GTEST_SKIP() << "needs MPI";
#else
  const auto world = strategy_world();
  auto* mpi = dynamic_cast<distributed::MpiCommunicator*>(world.get());
  if (mpi == nullptr || world->size() < 2) GTEST_SKIP() << "needs 2 or more MPI ranks";
  // A communicator of its own: after the failure this one is unusable, and
  // the tests that follow keep the world.
  std::shared_ptr<distributed::Communicator> comm = mpi->split(0, world->rank());
  const int last = comm->size() - 1;

  const std::string dir = ::testing::TempDir() + "/magmadnn_rank_failure_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  test::write_stripes(dir, "train", 200, 1, {149, 30, true});
  test::write_stripes(dir, "t10k", 40, 2, {149, 30, true});
  run::Json j;
  j["layers"] = run::Json::array({{{"type", "flatten"}},
                                  {{"type", "dense"}, {"units", 16}, {"activation", "relu"}},
                                  {{"type", "dense"}, {"units", 3}, {"activation", "softmax"}}});
  j["data"] = {{"dataset", "idx"}, {"dir", dir}, {"val_split", 0.0}};
  j["optimizer"] = {{"type", "sgd"}, {"learning_rate", 0.1}};
  j["epochs"] = 3;
  j["batch_size"] = 20;
  j["distributed"] = {{"watchdog_s", 60}};
  run::RunOptions o;
  o.communicator = comm;
  auto failing = std::make_shared<model::LambdaCallback<float>>();
  int steps = 0;
  failing->batch_end = [&](model::NeuralNetwork<float>&, const model::BatchLogs&) {
    if (comm->rank() == last && ++steps == 3) throw ValueError("the user's callback failed on purpose");
  };
  o.callbacks.push_back(failing);

  std::string error;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    run::TrainingRun(run::parse_config(j)).run(o);
  } catch (const std::exception& e) {
    error = e.what();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::filesystem::remove_all(dir);

  ASSERT_NE(error, "") << "rank " << comm->rank() << " trained on";
  EXPECT_NE(error.find("the user's callback failed on purpose"), std::string::npos) << error;
  if (comm->rank() != last) {
    EXPECT_NE(error.find("rank " + std::to_string(last) + " reported: rank " + std::to_string(last) +
                         " stopped with an error"),
              std::string::npos)
        << error;
  }
  EXPECT_LT(seconds, 20.0) << "the others waited for their watchdog: " << error;
  if (comm->rank() == 0) std::printf("rank 0 stopped after %.2f s: %s\n", seconds, error.c_str());
  world->barrier();
#endif
}

}  // namespace
