// MPI's lifetime around magmadnn's communicators, in the two ways a program
// can use them (exit status 0 when every check holds):
//   program  the program calls MPI_Init and MPI_Finalize itself, as MagmaDNN
//            v1 programs do; a communicator made in between still works,
//            and destroying it after MPI_Finalize is harmless;
//   library  the program never calls MPI: make_communicator("auto") under
//            mpirun starts MPI, and MPI is finalized at exit.
#include <mpi.h>

#include <cstdio>
#include <string>

#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/comm/mpi/mpi_environment.h"

using namespace magmadnn::distributed;

namespace {

int check_allreduce(Communicator& c, const char* mode) {
  std::int64_t one = 1;
  c.allreduce(host_buffer(&one, 1), ReduceOp::sum);
  if (one != c.size()) {
    std::printf("%s: FAIL rank %d: allreduce gave %lld, expected %d\n", mode, c.rank(), static_cast<long long>(one),
                c.size());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "program") {
    MPI_Init(&argc, &argv);
    std::unique_ptr<Communicator> c = make_communicator("mpi");
    int status = check_allreduce(*c, "program");
    if (MpiEnvironment::acquire()->initialised_here()) {
      std::printf("program: FAIL magmadnn claims to have initialised MPI\n");
      status = 1;
    }
    MPI_Finalize();
    c.reset();  // after MPI_Finalize: must free nothing and not crash
    if (status == 0) std::printf("program: ok\n");
    return status;
  }
  if (mode == "library") {
    if (!launched_by_mpi()) {
      std::printf("library: FAIL not started by mpirun\n");
      return 1;
    }
    std::unique_ptr<Communicator> c = make_communicator("auto");
    int status = c->backend() == "mpi" ? 0 : 1;
    status |= check_allreduce(*c, "library");
    auto env = MpiEnvironment::acquire();
    if (!env->initialised_here()) {
      std::printf("library: FAIL MPI should have been started by magmadnn\n");
      status = 1;
    }
    if (c->rank() == 0)
      std::printf("library: thread level %d (MPI_THREAD_MULTIPLE is %d)\n", env->thread_level(), MPI_THREAD_MULTIPLE);
    if (status == 0) std::printf("library: ok\n");
    return status;  // MPI is finalized after main, by the environment
  }
  std::printf("usage: mpi_lifetime_program program|library\n");
  return 2;
}
