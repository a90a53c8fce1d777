#include "magmadnn/comm/nccl/nccl_request.h"

#include <iostream>
#include <sstream>

#include "magmadnn/backend/cuda/cuda_check.h"

namespace magmadnn::distributed::nccl_detail {

NcclRequest::NcclRequest(std::shared_ptr<NcclCommunicator::State> state, OpInfo op, std::shared_ptr<Launch> launch,
                         std::unique_ptr<mpi_detail::DescriptorExchange> check)
    : state_(std::move(state)), op_(std::move(op)), launch_(std::move(launch)), check_(std::move(check)) {}

NcclRequest::~NcclRequest() {
  // After a failure (raised to whoever called test() or wait(), here or on
  // another request) there is nothing left to wait for.
  if (done_ || failed_ || !state_->broken.empty()) return;
  try {
    wait();
  } catch (const std::exception& e) {
    std::cerr << "[magmadnn] NcclCommunicator: a request destroyed while pending failed: " << e.what() << "\n";
  }
}

bool NcclRequest::test() {
  if (done_) return true;
  try {
    return poll();
  } catch (...) {
    failed_ = true;
    throw;
  }
}

bool NcclRequest::poll() {
  if (!launch_->event) state_->flush_p2p();
  // An error NCCL found in the background (a peer's connection dropped), or
  // another rank's failure, would otherwise show only as an event that
  // never completes.
  state_->check_async(op_);
  const bool everyone_arrived = check_ == nullptr || state_->progress(*check_);
  if (!event_done_) {
    const cudaError_t e = cudaEventQuery(launch_->event.get());
    if (e != cudaErrorNotReady) {
      MAGMADNN_CUDA_CHECK(e);
      event_done_ = true;
    }
  }
  return done_ = event_done_ && everyone_arrived;
}

void NcclRequest::wait() {
  const auto deadline = Clock::now() + op_.timeout;
  Backoff backoff;
  while (!test()) {
    if (Clock::now() > deadline) {
      std::ostringstream os;
      os << "NcclCommunicator watchdog on rank " << state_->rank << " (GPU " << state_->device << "): at step "
         << op_.step << ", " << op_.what << " (" << op_.bytes << " bytes) did not complete within "
         << op_.timeout.count() << " ms; " << NcclCommunicator::State::missing_view(check_.get())
         << "; the NCCL communicator was aborted";
      failed_ = true;
      MAGMADNN_THROW(CommError, state_->fail(os.str()));
    }
    backoff.pause();
  }
}

}  // namespace magmadnn::distributed::nccl_detail
