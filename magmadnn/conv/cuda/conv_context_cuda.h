/// @file conv_context_cuda.h
/// What every GPU convolution and pooling call runs in: a per-device stream
/// with a cuBLAS handle (and a cuDNN handle, made on first use) bound to it,
/// and ConvCall, the scope of one call.
///
/// Why a stream of our own: the CUDA backend does not expose its per-device
/// stream (backend/cuda/cuda_context.h is private to the backend object). So a
/// ConvCall waits for the backend's queued work on the device before it
/// starts and for its own stream before it returns: inputs written by backend
/// kernels are complete when we read them, and our outputs are complete before
/// any later backend kernel reads them. That costs two host synchronisations
/// per call; once the backend exports its stream, ConvCall can run on it and
/// drop both waits without any algorithm changing.
///
/// Requires: a CUDA device (only the compute paths of the GPU algorithms
/// construct a ConvCall; supports() and the registrars never do).
/// Guarantees: one ConvCall per device at a time (the handles and the cached
/// cuFFT work areas are shared); scratch memory comes from the backend's
/// caching pool and goes back only after the stream is idle, also when the
/// call throws.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "magmadnn/backend/cuda/cuda_check.h"
#include "magmadnn/backend/cuda/cuda_context.h"
#include "magmadnn/core/config.h"

namespace magmadnn::conv::cuda {

#if MAGMADNN_HAVE_CUDNN
struct CudnnDeleter {
  void operator()(cudnnContext* h) const noexcept { cudnnDestroy(h); }
};
using UniqueCudnn = std::unique_ptr<cudnnContext, CudnnDeleter>;
#endif

/// The conv state of one device; made on first use, lives until exit.
struct ConvDeviceContext {
  int device = 0;
  int sm_count = 1;
  magmadnn::cuda::UniqueStream stream;
  magmadnn::cuda::UniqueCublas blas;
#if MAGMADNN_HAVE_CUDNN
  UniqueCudnn dnn;  // cudnnCreate takes long and loads kernels: only when cuDNN is used
#endif
  std::mutex mutex;  // held by the ConvCall running on this device
};

/// Where kernels go: the stream and how many blocks fill the device.
struct Launch {
  cudaStream_t stream = nullptr;
  int sm_count = 1;
  /// Blocks for a grid-stride loop over n items of `block` threads each.
  unsigned grid(std::int64_t n, int block = 256) const;
};

/// One GPU convolution or pooling call on the current device (see file comment).
class ConvCall {
 public:
  ConvCall();
  /// Waits for the stream if finish() was not reached (an exception is
  /// unwinding), then returns the scratch memory.
  ~ConvCall();
  ConvCall(const ConvCall&) = delete;
  ConvCall& operator=(const ConvCall&) = delete;

  int device() const noexcept { return ctx_->device; }
  cudaStream_t stream() const noexcept { return ctx_->stream.get(); }
  cublasHandle_t blas() const noexcept { return ctx_->blas.get(); }
  Launch launch() const noexcept { return Launch{stream(), ctx_->sm_count}; }
#if MAGMADNN_HAVE_CUDNN
  /// The device's cuDNN handle on our stream, created on first use.
  cudnnHandle_t dnn();
#endif
  /// `bytes` of device memory from the backend's pool (null for 0), valid
  /// until this call ends.
  void* scratch(std::size_t bytes);
  /// Waits for everything queued by this call; throws DeviceError on failure.
  void finish();

 private:
  ConvDeviceContext* ctx_;
  std::unique_lock<std::mutex> lock_;
  std::vector<std::pair<void*, std::size_t>> scratch_;
  bool finished_ = false;
};

}  // namespace magmadnn::conv::cuda
