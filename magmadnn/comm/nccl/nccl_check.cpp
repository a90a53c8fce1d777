#include "magmadnn/comm/nccl/nccl_check.h"

namespace magmadnn::distributed::nccl_detail {

namespace {
const char* result_name(ncclResult_t r) noexcept {
  switch (r) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "ncclResult_t";
  }
}
}  // namespace

std::string nccl_error_text(ncclResult_t r, ncclComm_t comm) {
  std::string text = std::string(result_name(r)) + " (" + ncclGetErrorString(r) + ")";
  // The last error is per thread and not cleared by NCCL: it may describe
  // an earlier failure, but it is the only place NCCL says what went wrong.
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && last[0] != '\0') text += ": " + std::string(last);
  return text;
}

void throw_nccl(ncclResult_t r, ncclComm_t comm, const char* call, const std::string& context, const char* file,
                int line) {
  const std::string msg = "NCCL call `" + std::string(call) + "` failed: " + nccl_error_text(r, comm) +
                          (context.empty() ? std::string() : " (" + context + ")");
  if (r == ncclUnhandledCudaError) ::magmadnn::detail::throw_at<DeviceError>(file, line, msg);
  ::magmadnn::detail::throw_at<CommError>(file, line, msg);
}

ncclDataType_t nccl_type(dtype t) noexcept {
  switch (t) {
    case dtype::f32: return ncclFloat32;
    case dtype::f64: return ncclFloat64;
    case dtype::f16: return ncclFloat16;
    case dtype::bf16: return ncclBfloat16;
    case dtype::i32: return ncclInt32;
    case dtype::i64: return ncclInt64;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::avg: return ncclAvg;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
  }
  return ncclSum;
}

}  // namespace magmadnn::distributed::nccl_detail
