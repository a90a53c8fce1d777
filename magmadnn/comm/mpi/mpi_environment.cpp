#include "magmadnn/comm/mpi/mpi_environment.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "magmadnn/comm/mpi/mpi_check.h"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace magmadnn::distributed {

namespace mpi_detail {
std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(len)) + " (code " + std::to_string(code) + ")";
}
}  // namespace mpi_detail

namespace {
std::mutex g_mutex;

// Open MPI's non-blocking allreduce (coll/libnbc) picks a binomial reduce +
// broadcast for fewer than 4 ranks whatever the size, which moves twice the
// data of a ring: 16-64 MiB allreduces ran at 60-75% of the blocking
// MPI_Allreduce on 2 ranks, and at 95-105% with the ring. So, when magmadnn
// starts MPI for a job of 2 or 3 ranks and the user has not chosen, ask for
// the ring (with 4 ranks or more libnbc picks it for large sizes itself).
void prefer_ring_allreduce_for_few_ranks() {
  const char* world = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (world == nullptr || std::getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm") != nullptr) return;
  const int n = std::atoi(world);
  if (n == 2 || n == 3) ::setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", 0);
}
// The process's own reference: MPI stays up between communicators (it cannot
// be initialised twice) and is finalized at exit, after the last of them.
std::shared_ptr<MpiEnvironment> g_env;
}  // namespace

bool MpiEnvironment::mpi_active() noexcept {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

std::shared_ptr<MpiEnvironment> MpiEnvironment::acquire() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_env) g_env.reset(new MpiEnvironment());
  return g_env;
}

MpiEnvironment::MpiEnvironment() {
  int initialized = 0;
  int finalized = 0;
  MAGMADNN_MPI_CHECK(MPI_Initialized(&initialized), "MpiEnvironment");
  MAGMADNN_MPI_CHECK(MPI_Finalized(&finalized), "MpiEnvironment");
  MAGMADNN_CHECK(!finalized, CommError,
                 "MpiEnvironment: MPI has been finalized already and cannot be initialised again; create "
                 "communicators before MPI_Finalize");
  if (initialized) {
    MAGMADNN_MPI_CHECK(MPI_Query_thread(&thread_level_), "asking the thread level of the program's MPI_Init");
  } else {
    prefer_ring_allreduce_for_few_ranks();
    MAGMADNN_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &thread_level_),
                       "initialising MPI with MPI_THREAD_MULTIPLE");
    initialised_here_ = true;
  }
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  cuda_aware_ = MPIX_Query_cuda_support() == 1;
#endif
  types_ = std::make_unique<mpi_detail::TypeTable>();
}

MpiEnvironment::~MpiEnvironment() {
  types_.reset();
  if (!initialised_here_ || !mpi_active()) return;
  const int rc = MPI_Finalize();
  if (rc != MPI_SUCCESS)
    std::fprintf(stderr, "magmadnn: MPI_Finalize failed: %s\n", mpi_detail::mpi_error_text(rc).c_str());
}

}  // namespace magmadnn::distributed
