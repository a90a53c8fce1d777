// make_communicator and LocalCommunicator, in one process started without a
// launcher (label cpu): "auto" must give the local communicator and no MPI.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <vector>

#include "magmadnn/core/config.h"
#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/comm/local_communicator.h"

namespace {

using namespace magmadnn;
using namespace magmadnn::distributed;

TEST(CommunicatorFactory, AutoWithoutALauncherIsLocal) {
  ASSERT_FALSE(launched_by_mpi()) << "run this test without mpirun";
  auto c = make_communicator("auto");
  EXPECT_EQ(c->backend(), "local");
  EXPECT_EQ(c->size(), 1);
  EXPECT_EQ(make_communicator()->backend(), "local");
  EXPECT_EQ(make_communicator("local")->backend(), "local");
}

TEST(CommunicatorFactory, LauncherVariablesAreRecognised) {
  ::setenv("SLURM_STEP_NUM_TASKS", "1", 1);
  EXPECT_FALSE(launched_by_mpi()) << "a step of one task is not a parallel launch";
  ::setenv("SLURM_STEP_NUM_TASKS", "4", 1);
  EXPECT_TRUE(launched_by_mpi());
  ::unsetenv("SLURM_STEP_NUM_TASKS");
  ::setenv("PMIX_RANK", "0", 1);
  EXPECT_TRUE(launched_by_mpi());
  ::unsetenv("PMIX_RANK");
  EXPECT_FALSE(launched_by_mpi());
}

// The variables as each launcher sets them (read off srun --mpi=pmix and
// mpirun inside an sbatch allocation, Slurm 22.05 and Open MPI 4.1).
TEST(CommunicatorFactory, LauncherIsNamedFromItsVariables) {
  EXPECT_EQ(launcher_name(), "none");
  ::setenv("SLURM_NTASKS", "2", 1);  // a batch script run directly: no launcher
  EXPECT_EQ(launcher_name(), "none");
  ::setenv("SLURM_STEP_NUM_TASKS", "2", 1);
  ::setenv("PMIX_RANK", "0", 1);
  EXPECT_EQ(launcher_name(), "srun");
  ::unsetenv("SLURM_STEP_NUM_TASKS");
  EXPECT_EQ(launcher_name(), "mpi") << "PMIx without Slurm's step: another launcher";
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);  // mpirun inside the allocation
  EXPECT_EQ(launcher_name(), "mpirun");
  for (const char* v : {"SLURM_NTASKS", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE"}) ::unsetenv(v);
  EXPECT_EQ(launcher_name(), "none");
}

TEST(CommunicatorFactory, UnknownAndUnavailableKindsAreNamed) {
  try {
    make_communicator("gloo");
    FAIL() << "no ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("\"gloo\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("auto, local, mpi, nccl"), std::string::npos) << e.what();
  }
#if !defined(MAGMADNN_HAVE_NCCL)
  EXPECT_THROW(make_communicator("nccl"), NotSupportedError);
#endif
#if !defined(MAGMADNN_HAVE_MPI)
  EXPECT_THROW(make_communicator("mpi"), NotSupportedError);
#endif
}

TEST(LocalCommunicator, CollectivesAreCopiesOrIdentities) {
  LocalCommunicator c;
  std::vector<float> v{1, 2, 3};
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
    c.allreduce(host_buffer(v.data(), v.size()), op);
    EXPECT_EQ(v, (std::vector<float>{1, 2, 3})) << reduce_op_name(op);
  }
  std::vector<float> out(3);
  c.allgather(host_buffer(static_cast<const float*>(v.data()), v.size()), host_buffer(out.data(), out.size()));
  EXPECT_EQ(out, v);
  std::vector<float> block(3);
  c.reduce_scatter(host_buffer(static_cast<const float*>(v.data()), 3), host_buffer(block.data(), 3), ReduceOp::sum);
  EXPECT_EQ(block, v);
  EXPECT_THROW(c.broadcast(host_buffer(v.data(), v.size()), 1), ValueError);
  Buffer dev{v.data(), v.size(), dtype::f32, Place::device};
  EXPECT_THROW(c.iallreduce(dev, ReduceOp::sum), NotSupportedError);
}

TEST(LocalCommunicator, SendToSelfMatchesByTagAndChecksTheCount) {
  LocalCommunicator c;
  std::vector<int> a{1, 2}, b{7, 8, 9};
  c.send(host_buffer(static_cast<const int*>(a.data()), a.size()), 0, 1);
  c.send(host_buffer(static_cast<const int*>(b.data()), b.size()), 0, 2);
  std::vector<int> got(3);
  c.recv(host_buffer(got.data(), 3), 0, 2);
  EXPECT_EQ(got, b);
  std::vector<int> wrong(3);
  EXPECT_THROW(c.recv(host_buffer(wrong.data(), 3), 0, 1), CommError);  // 2 sent, 3 expected
  EXPECT_THROW(c.recv(host_buffer(wrong.data(), 3), 0, 5), CommError);  // never sent
}

TEST(CommunicatorFactory, SplitsAOneRankCommunicator) {
  LocalCommunicator c;
  c.set_timeout(std::chrono::milliseconds(1234));
  const auto part = split_communicator(c, 0, 0);
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(part->size(), 1);
  EXPECT_EQ(part->timeout(), std::chrono::milliseconds(1234));
  EXPECT_EQ(split_communicator(c, -1, 0), nullptr);  // left out
}

}  // namespace
