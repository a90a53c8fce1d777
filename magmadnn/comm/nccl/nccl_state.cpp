#include "magmadnn/comm/nccl/nccl_state.h"

#include <algorithm>
#include <iostream>
#include <thread>

#include "magmadnn/backend/cuda/cuda_check.h"
#include "magmadnn/backend/registry.h"
#include "magmadnn/comm/nccl/nccl_check.h"

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

void NcclCommunicator::State::ensure_usable(const nccl_detail::OpInfo& op) {
  if (broken.empty() && mpi) {
    const std::string notice = mpi->poll_notice();
    if (!notice.empty()) (void)fail(notice, /*heard=*/true);
  }
  MAGMADNN_CHECK(broken.empty(), CommError,
                 "NcclCommunicator on rank " << rank << ": cannot run " << op.what
                                             << ": the communicator failed earlier and its NCCL communicator was "
                                                "aborted; first failure: "
                                             << broken << ". Make a new communicator");
}

std::string NcclCommunicator::State::fail(const std::string& message, bool heard) noexcept {
  const bool first = broken.empty();
  abort(message);
  if (first && !heard && mpi) mpi->send_notice(message);
  return message;
}

void NcclCommunicator::State::abort(const std::string& why) noexcept {
  if (broken.empty()) broken = why;
  if (comm == nullptr) return;
  // Aborting is the only way out of a hung NCCL kernel; its result says
  // nothing we could act on.
  (void)ncclCommAbort(comm);
  comm = nullptr;
}

std::string NcclCommunicator::State::missing_view(const mpi_detail::DescriptorExchange* check) {
  if (check == nullptr)
    return "NCCL cannot tell which rank is missing (the collective check over MPI is off, or this is a send or "
           "receive: the missing rank is its peer, or a rank that reported no failure)";
  const std::vector<int> missing = check->missing();
  if (missing.empty()) return "every rank reached it, but NCCL did not complete it (a rank may have died inside it)";
  std::ostringstream os;
  os << (missing.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < missing.size(); ++i) os << (i ? ", " : "") << missing[i];
  os << (missing.size() == 1 ? " has" : " have") << " not reached it";
  return os.str();
}

bool NcclCommunicator::State::progress(mpi_detail::DescriptorExchange& check) {
  try {
    return check.test();
  } catch (const CommError& e) {  // a mismatch: NCCL would run it with undefined results, or hang
    MAGMADNN_THROW(CommError,
                   fail(std::string("NcclCommunicator: ") + e.what() + "; the NCCL communicator was aborted"));
  }
}

void NcclCommunicator::State::check_async(const nccl_detail::OpInfo& op) {
  ensure_usable(op);
  ncclResult_t state = ncclSuccess;
  const ncclResult_t rc = ncclCommGetAsyncError(comm, &state);
  const ncclResult_t bad = rc != ncclSuccess ? rc : state;
  if (bad == ncclSuccess || bad == ncclInProgress) return;
  const std::string text = nccl_detail::nccl_error_text(bad, comm);
  MAGMADNN_THROW(CommError, fail("NcclCommunicator: NCCL reported an error during " + describe(op, rank, device) +
                                 ": " + text + "; the NCCL communicator was aborted"));
}

void NcclCommunicator::State::settle(const nccl_detail::OpInfo& op, const char* phase,
                                     nccl_detail::Clock::time_point deadline, mpi_detail::DescriptorExchange* check) {
  nccl_detail::Backoff backoff;
  for (;;) {
    ensure_usable(op);  // also hears other ranks' failure notices
    if (check != nullptr) (void)progress(*check);
    ncclResult_t state = ncclSuccess;
    const ncclResult_t rc = ncclCommGetAsyncError(comm, &state);
    const ncclResult_t bad = rc != ncclSuccess ? rc : state;
    if (bad == ncclSuccess) return;
    if (bad != ncclInProgress) {
      const std::string text = nccl_detail::nccl_error_text(bad, comm);
      MAGMADNN_THROW(CommError, fail(std::string("NcclCommunicator: NCCL failed during the ") + phase + " of " +
                                     describe(op, rank, device) + ": " + text + "; the NCCL communicator was aborted"));
    }
    if (nccl_detail::Clock::now() > deadline) {
      std::ostringstream os;
      os << "NcclCommunicator watchdog on rank " << rank << " (GPU " << device << "): at step " << op.step << ", the "
         << phase << " of " << op.what << " (" << op.bytes << " bytes) did not finish within " << op.timeout.count()
         << " ms; " << missing_view(check) << "; the NCCL communicator was aborted";
      MAGMADNN_THROW(CommError, fail(os.str()));
    }
    backoff.pause();
  }
}

std::shared_ptr<CUevent_st> NcclCommunicator::State::enqueue(const nccl_detail::OpInfo& op,
                                                             nccl_detail::Clock::time_point deadline,
                                                             const nccl_detail::Enqueue& calls,
                                                             mpi_detail::DescriptorExchange* check) {
  ensure_usable(op);
  cuda::DeviceGuard guard(device);
  // The CUDA backend queues its kernels on a stream it does not export, so
  // inputs written by them are complete only after this host wait.
  cuda_backend().synchronize(device);
  check_async(op);
  MAGMADNN_NCCL_CHECK(ncclGroupStart(), comm, op.what);
  try {
    calls(comm, stream.get());
  } catch (const std::exception& e) {
    (void)ncclGroupEnd();
    (void)fail("queueing " + op.what + " on rank " + std::to_string(rank) + " failed: " + e.what());
    throw;
  }
  const ncclResult_t rc = ncclGroupEnd();
  if (rc != ncclSuccess && rc != ncclInProgress) {
    try {
      MAGMADNN_NCCL_CHECK(rc, comm, op.what << " at step " << op.step);
    } catch (const std::exception& e) {
      (void)fail("launching " + op.what + " on rank " + std::to_string(rank) + " failed: " + e.what());
      throw;
    }
  }
  // A non-blocking communicator may still be connecting to peers here; no
  // CUDA work may be queued on its stream until it has settled.
  settle(op, "launch", deadline, check);
  try {
    cudaEvent_t ev = nullptr;
    MAGMADNN_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    std::shared_ptr<CUevent_st> done(ev, cuda::EventDeleter{});
    MAGMADNN_CUDA_CHECK(cudaEventRecord(ev, stream.get()));
    return done;
  } catch (const std::exception& e) {  // launched, but its completion could never be observed
    (void)fail("recording the completion of " + op.what + " on rank " + std::to_string(rank) + " failed: " + e.what());
    throw;
  }
}

void NcclCommunicator::State::flush_p2p() {
  if (pending_p2p.empty()) return;
  // Taken out first: whatever happens, these are launched at most once.
  std::vector<nccl_detail::PendingP2p> group;
  group.swap(pending_p2p);
  nccl_detail::OpInfo op;
  op.timeout = group.front().op.timeout;
  op.step = group.front().op.step;
  for (const auto& p : group) {
    op.bytes += p.op.bytes;
    op.timeout = std::min(op.timeout, p.op.timeout);
  }
  // Counted from the flush, not from the calls: a send issued long before
  // its wait has not been waiting for anyone yet.
  const auto deadline = nccl_detail::Clock::now() + op.timeout;
  op.what = group.size() == 1 ? group.front().op.what
                              : "group of " + std::to_string(group.size()) + " sends and receives, the first " +
                                    group.front().op.what;
  auto event = enqueue(op, deadline, [&](ncclComm_t c, cudaStream_t s) {
    for (const auto& p : group) {
      const ncclDataType_t t = nccl_detail::nccl_type(p.type);
      if (p.send) {
        MAGMADNN_NCCL_CHECK(ncclSend(p.send_buf, p.count, t, p.peer, c, s), c, p.op.what);
      } else {
        MAGMADNN_NCCL_CHECK(ncclRecv(p.recv_buf, p.count, t, p.peer, c, s), c, p.op.what);
      }
    }
  });
  for (auto& p : group) p.launch->event = event;
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
