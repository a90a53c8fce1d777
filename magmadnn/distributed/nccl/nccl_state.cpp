#include "magmadnn/distributed/nccl/nccl_state.h"

#include <algorithm>
#include <iostream>
#include <thread>

#include "magmadnn/distributed/nccl/nccl_check.h"

namespace magmadnn::distributed {

namespace nccl_detail {

void Backoff::pause() {
  // Yielding first keeps the latency of a small collective at a few
  // microseconds; sleeping later stops a long wait from taking a core that
  // the training thread or MPI's progress may need.
  if (rounds_ < 64) {
    ++rounds_;
    std::this_thread::yield();
    return;
  }
  const int k = std::min(rounds_++ - 63, 20);
  std::this_thread::sleep_for(std::chrono::microseconds(50 * k));
}

}  // namespace nccl_detail

namespace {

std::string describe(const nccl_detail::OpInfo& op, int rank, int device) {
  std::ostringstream os;
  os << op.what << " of " << op.bytes << " bytes at step " << op.step << " on rank " << rank << " (GPU " << device
     << ")";
  return os.str();
}

}  // namespace

void NcclCommunicator::State::ensure_usable(const nccl_detail::OpInfo& op) const {
  MAGMADNN_CHECK(broken.empty(), CommError,
                 "NcclCommunicator: cannot run " << op.what << ": the NCCL communicator was aborted earlier ("
                                                 << broken << "); make a new communicator");
}

void NcclCommunicator::State::abort(const std::string& why) noexcept {
  if (broken.empty()) broken = why;
  if (comm == nullptr) return;
  // Aborting is the only way out of a hung NCCL kernel; its result says
  // nothing we could act on.
  (void)ncclCommAbort(comm);
  comm = nullptr;
}

void NcclCommunicator::State::check_async(const nccl_detail::OpInfo& op) {
  ensure_usable(op);
  ncclResult_t state = ncclSuccess;
  const ncclResult_t rc = ncclCommGetAsyncError(comm, &state);
  const ncclResult_t bad = rc != ncclSuccess ? rc : state;
  if (bad == ncclSuccess || bad == ncclInProgress) return;
  const std::string text = nccl_detail::nccl_error_text(bad, comm);
  const std::string where = describe(op, rank, device);
  abort("NCCL error during " + where + ": " + text);
  MAGMADNN_THROW(CommError, "NcclCommunicator: NCCL reported an error during " << where << ": " << text
                                                                             << "; the NCCL communicator was aborted");
}

void NcclCommunicator::State::settle(const nccl_detail::OpInfo& op, const char* phase,
                                     nccl_detail::Clock::time_point deadline) {
  nccl_detail::Backoff backoff;
  for (;;) {
    ensure_usable(op);
    ncclResult_t state = ncclSuccess;
    const ncclResult_t rc = ncclCommGetAsyncError(comm, &state);
    const ncclResult_t bad = rc != ncclSuccess ? rc : state;
    if (bad == ncclSuccess) return;
    if (bad != ncclInProgress) {
      const std::string text = nccl_detail::nccl_error_text(bad, comm);
      const std::string where = describe(op, rank, device);
      abort(std::string("NCCL error during the ") + phase + " of " + where + ": " + text);
      MAGMADNN_THROW(CommError, "NcclCommunicator: NCCL failed during the " << phase << " of " << where << ": "
                                                                         << text << "; the NCCL communicator was aborted");
    }
    if (nccl_detail::Clock::now() > deadline) {
      const std::string where = describe(op, rank, device);
      abort(std::string("watchdog timeout during the ") + phase + " of " + where);
      MAGMADNN_THROW(CommError, "NcclCommunicator watchdog: the " << phase << " of " << where << " did not finish within "
                                                               << op.timeout.count()
                                                               << " ms; the NCCL communicator was aborted. NCCL cannot "
                                                                  "tell which rank is missing: it is a rank that "
                                                                  "reported no such timeout, or that died");
    }
    backoff.pause();
  }
}

NcclCommunicator::State::~State() {
  if (comm == nullptr) return;  // never joined, or aborted
  try {
    cuda::DeviceGuard guard(device);
    const auto deadline = nccl_detail::Clock::now() + drain_timeout;
    nccl_detail::Backoff backoff;
    // Operations nobody waited for still read and write user buffers:
    // finish them (bounded) before the communicator goes.
    for (cudaError_t e = cudaStreamQuery(stream.get()); e != cudaSuccess; e = cudaStreamQuery(stream.get())) {
      if (e != cudaErrorNotReady || nccl_detail::Clock::now() > deadline) {
        abort("destroyed with operations that did not complete");
        std::cerr << "[magmadnn] NcclCommunicator (rank " << rank << "): destroyed while operations were still "
                  << "running after " << drain_timeout.count() << " ms; the NCCL communicator was aborted\n";
        break;
      }
      backoff.pause();
    }
    if (comm != nullptr) {
      // Finalize flushes NCCL's own background work and, on a non-blocking
      // communicator, reports completion through the asynchronous state.
      ncclResult_t rc = ncclCommFinalize(comm);
      ncclResult_t state = rc;
      while (rc == ncclSuccess || rc == ncclInProgress) {
        rc = ncclCommGetAsyncError(comm, &state);
        if (rc != ncclSuccess || state != ncclInProgress || nccl_detail::Clock::now() > deadline) break;
        backoff.pause();
      }
      if (rc == ncclSuccess && state == ncclSuccess) {
        (void)ncclCommDestroy(comm);
        comm = nullptr;
      } else {
        abort("finalisation failed");
      }
    }
    scratch.reset();
    stream.reset();
  } catch (const std::exception& e) {
    abort(e.what());
    std::cerr << "[magmadnn] NcclCommunicator (rank " << rank << "): " << e.what() << "\n";
  }
}

}  // namespace magmadnn::distributed
