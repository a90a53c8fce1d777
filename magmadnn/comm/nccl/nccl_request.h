/// @file nccl_request.h
/// NcclRequest: the Request of one NCCL operation, a CUDA event recorded on
/// the communicator's stream right after the operation (shared by the
/// operations of one group), and for a collective its descriptor exchange
/// over MPI. Private to comm/nccl/.
///
/// test() first launches the pending sends and receives if this is one of
/// them, then checks NCCL's asynchronous error state, other ranks' failure
/// notices and the descriptor exchange (a mismatch throws), and queries the
/// event; the operation is complete when the event is and every rank's
/// descriptor has arrived. wait() polls test() until then, or until the
/// communicator's timeout (as it was when the operation was called) has
/// passed since wait() was entered: then the NCCL communicator is aborted,
/// the other ranks are told, and CommError names the step, the operation,
/// its byte count and the ranks that have not reached it. A request keeps
/// the shared state alive, so it may outlive its communicator; destroyed
/// while pending, it waits, and reports (never throws) a failure on stderr,
/// unless the communicator has failed already (that failure was raised).
#pragma once

#include <memory>
#include <string>

#include "magmadnn/comm/nccl/nccl_state.h"

namespace magmadnn::distributed::nccl_detail {

class NcclRequest final : public Request {
 public:
  NcclRequest(std::shared_ptr<NcclCommunicator::State> state, OpInfo op, std::shared_ptr<Launch> launch,
              std::unique_ptr<mpi_detail::DescriptorExchange> check);
  ~NcclRequest() override;
  NcclRequest(const NcclRequest&) = delete;
  NcclRequest& operator=(const NcclRequest&) = delete;

  bool test() override;
  void wait() override;

 private:
  bool poll();  // test() without the bookkeeping of failures

  std::shared_ptr<NcclCommunicator::State> state_;
  OpInfo op_;
  std::shared_ptr<Launch> launch_;
  std::unique_ptr<mpi_detail::DescriptorExchange> check_;  // null for send/recv, or with the check off
  bool event_done_ = false;
  bool done_ = false;
  bool failed_ = false;
};

}  // namespace magmadnn::distributed::nccl_detail
