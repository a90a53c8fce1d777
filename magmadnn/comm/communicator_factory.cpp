#include "magmadnn/comm/communicator_factory.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "magmadnn/core/config.h"
#include "magmadnn/comm/flight_recorder.h"
#include "magmadnn/comm/local_communicator.h"

#if defined(MAGMADNN_HAVE_MPI)
#include "magmadnn/comm/mpi/mpi_communicator.h"
#include "magmadnn/comm/mpi/mpi_environment.h"
#endif
#include "magmadnn/backend/registry.h"
#include "magmadnn/core/module.h"

namespace magmadnn::distributed {

namespace {

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

std::unique_ptr<Communicator> make_mpi() {
#if defined(MAGMADNN_HAVE_MPI)
  return std::make_unique<MpiCommunicator>();
#else
  MAGMADNN_THROW(NotSupportedError,
                 "make_communicator(\"mpi\"): this magmadnn was built without MPI (configure with MAGMADNN_MPI=ON "
                 "and an MPI installed)");
#endif
}

// The NCCL communicator is a module (core/module.h), loaded only once a GPU
// is known to be there, so a process without one maps no NCCL library.
std::unique_ptr<Communicator> make_nccl() {
#if defined(MAGMADNN_HAVE_NCCL)
  MAGMADNN_CHECK(has_cuda_device(), DeviceError,
                 "the NCCL communicator needs a GPU: " << cuda_unavailable_reason()
                                                       << "; use the MPI communicator (\"mpi\") instead");
  std::string why;
  auto make = module_function<Communicator* (*)(long long timeout_ms)>(load_module("nccl", &why),
                                                                      "magmadnn_nccl_make_communicator", &why);
  MAGMADNN_CHECK(make != nullptr, NotSupportedError, "make_communicator(\"nccl\"): " << why);
  return std::unique_ptr<Communicator>(make(60000));
#else
  MAGMADNN_THROW(NotSupportedError,
                 "make_communicator(\"nccl\"): this magmadnn was built without NCCL (it needs MAGMADNN_CUDA=ON, "
                 "NCCL and MPI); use \"mpi\"");
#endif
}

}  // namespace

std::unique_ptr<Communicator> duplicate_communicator(Communicator& comm) {
#if defined(MAGMADNN_HAVE_MPI)
  if (auto* mpi = dynamic_cast<MpiCommunicator*>(&comm)) {
    auto out = std::make_unique<MpiCommunicator>(mpi->comm());
    out->set_timeout(comm.timeout());
    out->set_collective_check(mpi->collective_check());
    return out;
  }
#endif
  if (comm.size() == 1) {
    auto local = std::make_unique<LocalCommunicator>();
    local->set_timeout(comm.timeout());
    return local;
  }
  MAGMADNN_THROW(NotSupportedError, "duplicate_communicator: a " << comm.backend() << " communicator of "
                                                                 << comm.size()
                                                                 << " ranks cannot be duplicated (only mpi, or one rank)");
}

bool concurrent_communicators(const Communicator& comm) noexcept {
#if defined(MAGMADNN_HAVE_MPI)
  if (dynamic_cast<const MpiCommunicator*>(&comm) != nullptr) {
    try {
      return MpiEnvironment::acquire()->thread_multiple();
    } catch (...) {
      return false;
    }
  }
#endif
  return comm.size() == 1;
}

bool launched_by_mpi() noexcept {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (env_set(name)) return true;
  // srun sets SLURM_STEP_NUM_TASKS for the job step; a batch script run
  // directly has no step of several tasks.
  if (const char* n = std::getenv("SLURM_STEP_NUM_TASKS")) return std::atoi(n) > 1;
  return false;
}

std::string launcher_name() {
  // mpirun first: inside an allocation its ranks also see Slurm's variables.
  if (env_set("OMPI_COMM_WORLD_SIZE")) return "mpirun";
  if (const char* n = std::getenv("SLURM_STEP_NUM_TASKS"); n != nullptr && std::atoi(n) > 1) return "srun";
  return launched_by_mpi() ? "mpi" : "none";
}

std::unique_ptr<Communicator> make_communicator(const std::string& kind) {
  if (kind == "auto") return launched_by_mpi() ? make_mpi() : std::make_unique<LocalCommunicator>();
  if (kind == "local") return std::make_unique<LocalCommunicator>();
  if (kind == "mpi") return make_mpi();
  if (kind == "nccl") return make_nccl();
  MAGMADNN_THROW(ValueError, "make_communicator: unknown kind \"" << kind << "\" (known: auto, local, mpi, nccl)");
}

std::unique_ptr<Communicator> split_shared_memory(Communicator& comm) {
#if defined(MAGMADNN_HAVE_MPI)
  if (auto* mpi = dynamic_cast<MpiCommunicator*>(&comm)) return mpi->split_shared();
#endif
  if (comm.size() == 1) return split_communicator(comm, 0, 0);
  MAGMADNN_THROW(NotSupportedError, "split_shared_memory: a " << comm.backend() << " communicator of " << comm.size()
                                                              << " ranks cannot be split (only mpi, or one rank)");
}

std::unique_ptr<Communicator> split_communicator(Communicator& comm, int color, int key) {
#if defined(MAGMADNN_HAVE_MPI)
  if (auto* mpi = dynamic_cast<MpiCommunicator*>(&comm)) return mpi->split(color, key);
#endif
  if (comm.size() == 1) {
    if (color < 0) return nullptr;
    auto local = std::make_unique<LocalCommunicator>();
    local->set_timeout(comm.timeout());
    local->set_step(comm.step());
    return local;
  }
  MAGMADNN_THROW(NotSupportedError, "split_communicator: a " << comm.backend() << " communicator of " << comm.size()
                                                             << " ranks cannot be split (only mpi, or one rank)");
}

void abort_job(int code) {
  // The last collectives of this rank, for `magmadnn flight` (flight_recorder.h).
  flight::dump("the job was ended after an error (abort_job)");
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
#if defined(MAGMADNN_HAVE_MPI)
  if (MpiEnvironment::mpi_active()) {
    // The other ranks learn of a communicator's failure from its notice
    // (mpi_request.h) and print their own report; give them that moment
    // before the launcher kills them.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    MPI_Abort(MPI_COMM_WORLD, code);
  }
#endif
  std::exit(code);
}

}  // namespace magmadnn::distributed
