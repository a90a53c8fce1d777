/// @file nccl_check.h
/// MAGMADNN_NCCL_CHECK and the translations between magmadnn's and NCCL's
/// enums. Private to comm/nccl/ (it includes nccl.h).
///
/// A failing NCCL call throws with the call, NCCL's error name, NCCL's last
/// error text (which says what went wrong, e.g. "Duplicate GPU detected"),
/// the caller's context and file:line: DeviceError when NCCL reports a CUDA
/// failure, CommError otherwise. ncclInProgress is not a failure; calls on
/// a non-blocking communicator that may return it go through
/// NcclCommunicator::State::settle instead.
#pragma once

#include <nccl.h>

#include <string>

#include "magmadnn/core/errors.h"
#include "magmadnn/comm/communicator.h"

namespace magmadnn::distributed::nccl_detail {

/// "ncclInvalidUsage (invalid usage): Duplicate GPU detected ..." for `comm`
/// (null: no communicator yet).
std::string nccl_error_text(ncclResult_t r, ncclComm_t comm);

[[noreturn]] void throw_nccl(ncclResult_t r, ncclComm_t comm, const char* call, const std::string& context,
                             const char* file, int line);

/// NCCL's type for a magmadnn dtype (every dtype has one).
ncclDataType_t nccl_type(dtype t) noexcept;
/// NCCL's reduction for a ReduceOp (avg is ncclAvg).
ncclRedOp_t nccl_op(ReduceOp op) noexcept;

}  // namespace magmadnn::distributed::nccl_detail

/// Throws unless the NCCL call `call` returned ncclSuccess. `comm` (may be
/// null) supplies ncclGetLastError's text; `context` is streamed into the
/// message (what was being done).
#define MAGMADNN_NCCL_CHECK(call, comm, context)                                                                      \
  do {                                                                                                                \
    const ncclResult_t magmadnn_nccl_rc_ = (call);                                                                    \
    if (magmadnn_nccl_rc_ != ncclSuccess)                                                                             \
      ::magmadnn::distributed::nccl_detail::throw_nccl(                                                               \
          magmadnn_nccl_rc_, (comm), #call, (::magmadnn::detail::MsgBuilder() << context).str(), __FILE__, __LINE__); \
  } while (0)
