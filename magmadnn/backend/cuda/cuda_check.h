/// @file cuda_check.h
/// Checks for CUDA runtime, cuBLAS(Lt), cuRAND and cuDNN status codes. Each
/// macro evaluates its expression once and, on failure, throws
/// magmadnn::DeviceError naming the call, the library's error text and the
/// file:line, so a failure on a remote GPU run is diagnosable from its log.
///
/// MAGMADNN_KERNEL_CHECK() goes right after every kernel launch: a bad launch
/// configuration is only reported through cudaGetLastError.
///
/// Only for sources compiled with MAGMADNN_HAVE_CUDA (backend/cuda, *_cuda.*).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <curand.h>

#include <string>

#include "magmadnn/core/config.h"
#include "magmadnn/core/errors.h"

#if MAGMADNN_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace magmadnn::cuda::detail {

[[noreturn]] inline void throw_status(const char* library, const char* call, const std::string& what,
                                      const char* file, int line) {
  ::magmadnn::detail::throw_at<DeviceError>(file, line, std::string(library) + " call `" + call + "` failed: " + what);
}

inline std::string cuda_error_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

inline std::string cublas_error_text(cublasStatus_t s) {
  return std::string(cublasGetStatusName(s)) + " (" + cublasGetStatusString(s) + ")";
}

// cuRAND has no status-to-string function.
inline std::string curand_error_text(curandStatus_t s) {
  switch (s) {
    case CURAND_STATUS_VERSION_MISMATCH: return "CURAND_STATUS_VERSION_MISMATCH";
    case CURAND_STATUS_NOT_INITIALIZED: return "CURAND_STATUS_NOT_INITIALIZED";
    case CURAND_STATUS_ALLOCATION_FAILED: return "CURAND_STATUS_ALLOCATION_FAILED";
    case CURAND_STATUS_TYPE_ERROR: return "CURAND_STATUS_TYPE_ERROR";
    case CURAND_STATUS_OUT_OF_RANGE: return "CURAND_STATUS_OUT_OF_RANGE";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE: return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED: return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
    case CURAND_STATUS_LAUNCH_FAILURE: return "CURAND_STATUS_LAUNCH_FAILURE";
    case CURAND_STATUS_PREEXISTING_FAILURE: return "CURAND_STATUS_PREEXISTING_FAILURE";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "CURAND_STATUS_INITIALIZATION_FAILED";
    case CURAND_STATUS_ARCH_MISMATCH: return "CURAND_STATUS_ARCH_MISMATCH";
    case CURAND_STATUS_INTERNAL_ERROR: return "CURAND_STATUS_INTERNAL_ERROR";
    default: return "curandStatus_t " + std::to_string(static_cast<int>(s));
  }
}

}  // namespace magmadnn::cuda::detail

#define MAGMADNN_CUDA_CHECK(expr)                                                                              \
  do {                                                                                                        \
    const cudaError_t magmadnn_err_ = (expr);                                                                 \
    if (magmadnn_err_ != cudaSuccess)                                                                         \
      ::magmadnn::cuda::detail::throw_status("CUDA", #expr, ::magmadnn::cuda::detail::cuda_error_text(magmadnn_err_), \
                                             __FILE__, __LINE__);                                             \
  } while (0)

#define MAGMADNN_CUBLAS_CHECK(expr)                                                                      \
  do {                                                                                                  \
    const cublasStatus_t magmadnn_st_ = (expr);                                                         \
    if (magmadnn_st_ != CUBLAS_STATUS_SUCCESS)                                                          \
      ::magmadnn::cuda::detail::throw_status("cuBLAS", #expr,                                           \
                                             ::magmadnn::cuda::detail::cublas_error_text(magmadnn_st_), \
                                             __FILE__, __LINE__);                                       \
  } while (0)

#define MAGMADNN_CURAND_CHECK(expr)                                                                      \
  do {                                                                                                  \
    const curandStatus_t magmadnn_st_ = (expr);                                                         \
    if (magmadnn_st_ != CURAND_STATUS_SUCCESS)                                                          \
      ::magmadnn::cuda::detail::throw_status("cuRAND", #expr,                                           \
                                             ::magmadnn::cuda::detail::curand_error_text(magmadnn_st_), \
                                             __FILE__, __LINE__);                                       \
  } while (0)

#if MAGMADNN_HAVE_CUDNN
#define MAGMADNN_CUDNN_CHECK(expr)                                                                      \
  do {                                                                                                 \
    const cudnnStatus_t magmadnn_st_ = (expr);                                                         \
    if (magmadnn_st_ != CUDNN_STATUS_SUCCESS)                                                          \
      ::magmadnn::cuda::detail::throw_status("cuDNN", #expr, cudnnGetErrorString(magmadnn_st_), __FILE__, \
                                             __LINE__);                                                \
  } while (0)
#endif

/// After a kernel launch: reports a bad launch (configuration, missing kernel
/// image for this GPU) at the launch site rather than at a later sync.
#define MAGMADNN_KERNEL_CHECK()                                                                          \
  do {                                                                                                  \
    const cudaError_t magmadnn_err_ = cudaGetLastError();                                               \
    if (magmadnn_err_ != cudaSuccess)                                                                   \
      ::magmadnn::cuda::detail::throw_status("CUDA", "kernel launch",                                   \
                                             ::magmadnn::cuda::detail::cuda_error_text(magmadnn_err_),  \
                                             __FILE__, __LINE__);                                       \
  } while (0)
