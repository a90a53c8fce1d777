#include "magmadnn/distributed/nccl/nccl_request.h"

#include <iostream>

#include "magmadnn/backend/cuda/cuda_check.h"

namespace magmadnn::distributed::nccl_detail {

NcclRequest::NcclRequest(std::shared_ptr<NcclCommunicator::State> state, OpInfo op, std::shared_ptr<Launch> launch,
                         Clock::time_point deadline)
    : state_(std::move(state)), op_(std::move(op)), launch_(std::move(launch)), deadline_(deadline) {}

NcclRequest::~NcclRequest() {
  if (done_) return;
  try {
    wait();
  } catch (const std::exception& e) {
    std::cerr << "[magmadnn] NcclCommunicator: a request destroyed while pending failed: " << e.what() << "\n";
  }
}

bool NcclRequest::test() {
  if (done_) return true;
  if (!launch_->event) state_->flush_p2p();
  // An error NCCL found in the background (a peer's connection dropped)
  // would otherwise show only as an event that never completes.
  state_->check_async(op_);
  const cudaError_t e = cudaEventQuery(launch_->event.get());
  if (e == cudaErrorNotReady) return false;
  MAGMADNN_CUDA_CHECK(e);
  done_ = true;
  return true;
}

void NcclRequest::wait() {
  Backoff backoff;
  while (!test()) {
    if (Clock::now() > deadline_) {
      std::ostringstream where;
      where << op_.what << " of " << op_.bytes << " bytes at step " << op_.step << " on rank " << state_->rank
            << " (GPU " << state_->device << ")";
      state_->abort("watchdog timeout in " + where.str());
      MAGMADNN_THROW(CommError, "NcclCommunicator watchdog: " << where.str() << " did not complete within "
                                                            << op_.timeout.count()
                                                            << " ms; the NCCL communicator was aborted. NCCL cannot "
                                                               "tell which rank is missing: it is a rank that "
                                                               "reported no such timeout, or that died");
    }
    backoff.pause();
  }
}

}  // namespace magmadnn::distributed::nccl_detail
