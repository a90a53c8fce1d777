/// @file nccl_request.h
/// NcclRequest: the Request of one NCCL operation, a CUDA event recorded on
/// the communicator's stream right after the operation (shared by the
/// operations of one group). Private to distributed/nccl/.
///
/// test() first launches the pending sends and receives if this is one of
/// them, then checks NCCL's asynchronous error state and queries the event;
/// wait() polls test() until the operation completes or its deadline (the
/// launch time plus the communicator's timeout at launch) passes, which
/// aborts the NCCL communicator and throws CommError naming the step, the
/// operation and its byte count. A request keeps the shared state alive, so
/// it may outlive its communicator; destroyed while pending, it waits, and
/// reports (never throws) a failure on stderr.
#pragma once

#include <memory>

#include "magmadnn/backend/cuda/cuda_context.h"
#include "magmadnn/distributed/nccl/nccl_state.h"

namespace magmadnn::distributed::nccl_detail {

class NcclRequest final : public Request {
 public:
  NcclRequest(std::shared_ptr<NcclCommunicator::State> state, OpInfo op, std::shared_ptr<Launch> launch,
              Clock::time_point deadline);
  ~NcclRequest() override;
  NcclRequest(const NcclRequest&) = delete;
  NcclRequest& operator=(const NcclRequest&) = delete;

  bool test() override;
  void wait() override;

 private:
  std::shared_ptr<NcclCommunicator::State> state_;
  OpInfo op_;
  std::shared_ptr<Launch> launch_;
  Clock::time_point deadline_;
  bool done_ = false;
};

}  // namespace magmadnn::distributed::nccl_detail
