// NcclCommunicator's construction: MPI hands rank 0's NCCL unique id to
// every rank, then each rank joins the non-blocking NCCL communicator on
// its GPU. Every step that waits for other ranks is bounded by the timeout.
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "magmadnn/backend/cuda/cuda_check.h"
#include "magmadnn/backend/registry.h"
#include "magmadnn/comm/mpi/mpi_environment.h"
#include "magmadnn/comm/nccl/nccl_check.h"
#include "magmadnn/comm/nccl/nccl_communicator.h"
#include "magmadnn/comm/nccl/nccl_state.h"

namespace magmadnn::distributed {

namespace {

using nccl_detail::Clock;

void check_mpi(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  ::magmadnn::detail::throw_at<CommError>(
      file, line, std::string("MPI call `") + call + "` failed while joining the NCCL communicator: " + text);
}
#define MAGMADNN_NCCL_MPI_CHECK(call) check_mpi((call), #call, __FILE__, __LINE__)

// What the MPI exchanges of joining write into: rank 0's unique id, every
// rank's host name, and the duplicate communicator of the collective check.
// MPI owns these until the requests complete: on a timeout they stay
// pending, so the whole struct is deliberately leaked (see wait_for).
struct JoinExchange {
  ncclUniqueId id{};
  char my_host[MPI_MAX_PROCESSOR_NAME] = {};
  std::vector<char> hosts;  // size x MPI_MAX_PROCESSOR_NAME
  MPI_Comm check = MPI_COMM_NULL;
  MPI_Request requests[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
};

void wait_for(std::unique_ptr<JoinExchange>& x, Clock::time_point deadline, std::chrono::milliseconds timeout,
              int rank) {
  static const char* const what[3] = {"rank 0's NCCL unique id", "the other ranks' host names",
                                      "the duplicate MPI communicator of the collective check"};
  nccl_detail::Backoff backoff;
  for (;;) {
    // One MPI_Test each (not MPI_Testall), so a completed request turns into
    // MPI_REQUEST_NULL and the message can say which exchange is missing.
    bool all = true;
    for (MPI_Request& r : x->requests) {
      int done = 0;
      MAGMADNN_NCCL_MPI_CHECK(MPI_Test(&r, &done, MPI_STATUS_IGNORE));
      all = all && done;
    }
    if (all) return;
    if (Clock::now() > deadline) {
      int first = 0;
      while (x->requests[first] == MPI_REQUEST_NULL) ++first;
      // MPI may still write into the buffers when the late rank arrives;
      // freeing them would let it write into reused memory.
      (void)x.release();
      MAGMADNN_THROW(CommError, "NcclCommunicator: rank "
                                    << rank << " waited " << timeout.count() << " ms for " << what[first]
                                    << " over MPI; some rank never constructed its NcclCommunicator (or died)");
    }
    backoff.pause();
  }
}

// This rank's index among the ranks on its host, and how many there are.
// Ranks on one host take GPUs in rank order: local rank % device count.
std::pair<int, int> local_rank_of(const JoinExchange& x, int rank, int size) {
  int local = 0, on_host = 0;
  const char* mine = &x.hosts[static_cast<std::size_t>(rank) * MPI_MAX_PROCESSOR_NAME];
  for (int r = 0; r < size; ++r) {
    const char* theirs = &x.hosts[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME];
    if (std::strncmp(mine, theirs, MPI_MAX_PROCESSOR_NAME) != 0) continue;
    ++on_host;
    if (r < rank) ++local;
  }
  return {local, on_host};
}

}  // namespace

NcclCommunicator::NcclCommunicator(MPI_Comm mpi_comm) : NcclCommunicator(mpi_comm, Options{}) {}

NcclCommunicator::NcclCommunicator(MPI_Comm mpi_comm, const Options& options) {
  MAGMADNN_CHECK(has_cuda_device(), DeviceError, "NcclCommunicator needs a GPU: " << cuda_unavailable_reason());
  // MPI carries the unique id and the collective check; initialised here
  // if the program has not (MpiEnvironment keeps it up until exit).
  std::shared_ptr<MpiEnvironment> env = MpiEnvironment::acquire();
  timeout_ = options.timeout;

  auto s = std::make_shared<State>();
  s->drain_timeout = options.timeout;
  MAGMADNN_NCCL_MPI_CHECK(MPI_Comm_rank(mpi_comm, &s->rank));
  MAGMADNN_NCCL_MPI_CHECK(MPI_Comm_size(mpi_comm, &s->size));
  const auto deadline = Clock::now() + options.timeout;

  auto x = std::make_unique<JoinExchange>();
  if (s->rank == 0) MAGMADNN_NCCL_CHECK(ncclGetUniqueId(&x->id), nullptr, "rank 0 creating the NCCL unique id");
  int name_len = 0;
  MAGMADNN_NCCL_MPI_CHECK(MPI_Get_processor_name(x->my_host, &name_len));
  x->hosts.resize(static_cast<std::size_t>(s->size) * MPI_MAX_PROCESSOR_NAME);
  MAGMADNN_NCCL_MPI_CHECK(MPI_Ibcast(&x->id, sizeof(ncclUniqueId), MPI_BYTE, 0, mpi_comm, &x->requests[0]));
  MAGMADNN_NCCL_MPI_CHECK(MPI_Iallgather(x->my_host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, x->hosts.data(),
                                         MPI_MAX_PROCESSOR_NAME, MPI_CHAR, mpi_comm, &x->requests[1]));
  if (options.check_collectives) MAGMADNN_NCCL_MPI_CHECK(MPI_Comm_idup(mpi_comm, &x->check, &x->requests[2]));
  wait_for(x, deadline, options.timeout, s->rank);

  if (options.check_collectives) {
    // Owned by the CommState from here on: its destructor frees the
    // duplicate, also when joining NCCL fails below.
    auto m = std::make_shared<mpi_detail::CommState>();
    m->env = env;
    m->coll_check = std::exchange(x->check, MPI_COMM_NULL);
    MAGMADNN_NCCL_MPI_CHECK(MPI_Comm_set_errhandler(m->coll_check, MPI_ERRORS_RETURN));
    m->rank = s->rank;
    m->size = s->size;
    m->post_notice_receive();
    s->mpi = std::move(m);
  }

  int devices = 0;
  MAGMADNN_CUDA_CHECK(cudaGetDeviceCount(&devices));
  const auto [local_rank, ranks_on_host] = local_rank_of(*x, s->rank, s->size);
  s->device = options.device >= 0 ? options.device : local_rank % devices;
  MAGMADNN_CHECK(s->device < devices, DeviceError,
                 "NcclCommunicator: rank " << s->rank << " asked for GPU " << s->device << ", but there are " << devices
                                           << " GPUs");

  // NCCL binds a communicator to the current device at its creation; the
  // caller's current device is restored afterwards.
  cuda::DeviceGuard guard(s->device);
  cudaStream_t stream = nullptr;
  MAGMADNN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  s->stream.reset(stream);
  void* scratch = nullptr;
  MAGMADNN_CUDA_CHECK(cudaMalloc(&scratch, sizeof(std::int32_t)));
  s->scratch.reset(scratch);
  MAGMADNN_CUDA_CHECK(cudaMemset(scratch, 0, sizeof(std::int32_t)));

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every wait for other ranks goes through settle(), which is bounded
  const ncclResult_t rc = ncclCommInitRankConfig(&s->comm, s->size, x->id, s->rank, &config);
  nccl_detail::OpInfo join{"ncclCommInitRankConfig(" + std::to_string(s->size) + " ranks)", sizeof(ncclUniqueId), step_,
                           options.timeout};
  if (rc != ncclSuccess && rc != ncclInProgress) {
    try {
      MAGMADNN_NCCL_CHECK(
          rc, s->comm,
          "rank " << s->rank << " of " << s->size << " joining on GPU " << s->device
                  << (ranks_on_host > devices ? "; this host runs more ranks than it has GPUs, which NCCL before 2.30 "
                                                "refuses (see docs/gpu.md)"
                                              : ""));
    } catch (const std::exception& e) {
      (void)s->fail(e.what());  // the other ranks stop waiting for this one
      throw;
    }
  }
  s->settle(join, "join", deadline);

  state_ = std::move(s);
}

NcclCommunicator::~NcclCommunicator() = default;

int NcclCommunicator::rank() const noexcept { return state_->rank; }
int NcclCommunicator::size() const noexcept { return state_->size; }
int NcclCommunicator::device() const noexcept { return state_->device; }

int NcclCommunicator::library_version() {
  int v = 0;
  MAGMADNN_NCCL_CHECK(ncclGetVersion(&v), nullptr, "querying the NCCL version");
  return v;
}

std::unique_ptr<Communicator> make_nccl_communicator(std::chrono::milliseconds timeout) {
  MAGMADNN_CHECK(has_cuda_device(), DeviceError,
                 "the NCCL communicator needs a GPU: " << cuda_unavailable_reason()
                                                       << "; use the MPI communicator (\"mpi\") instead");
  NcclCommunicator::Options options;
  options.timeout = timeout;
  return std::make_unique<NcclCommunicator>(MPI_COMM_WORLD, options);
}

}  // namespace magmadnn::distributed

// The NCCL module's entry point (core/module.h, comm/communicator_factory.cpp).
extern "C" magmadnn::distributed::Communicator* magmadnn_nccl_make_communicator(long long timeout_ms) {
  return magmadnn::distributed::make_nccl_communicator(std::chrono::milliseconds(timeout_ms)).release();
}
