#include "magmadnn/conv/cuda/conv_context_cuda.h"

#include <algorithm>
#include <memory>

#include "magmadnn/backend/registry.h"

namespace magmadnn::conv::cuda {
namespace {

class ConvContexts {
 public:
  static ConvContexts& instance() {
    // Never destroyed, like the backends: handles destroyed by a static
    // destructor after the CUDA runtime has shut down would crash at exit.
    static ConvContexts* all = new ConvContexts;
    return *all;
  }

  ConvDeviceContext& get(int device) {
    MAGMADNN_CHECK(device >= 0 && device < count_, DeviceError,
                   "convolution on CUDA device " << device << ", but there are " << count_ << " CUDA devices");
    std::call_once(once_[static_cast<std::size_t>(device)], [&] {
      auto c = std::make_unique<ConvDeviceContext>();
      c->device = device;
      MAGMADNN_CUDA_CHECK(cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, device));
      cudaStream_t s = nullptr;
      MAGMADNN_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      c->stream.reset(s);
      cublasHandle_t h = nullptr;
      MAGMADNN_CUBLAS_CHECK(cublasCreate(&h));
      c->blas.reset(h);
      MAGMADNN_CUBLAS_CHECK(cublasSetStream(h, s));
      MAGMADNN_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
      // Default math: no TF32 for float (it would differ from the CPU
      // algorithms by ~1e-3 relative), tensor cores only where exact.
      MAGMADNN_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
      ctx_[static_cast<std::size_t>(device)] = std::move(c);
    });
    return *ctx_[static_cast<std::size_t>(device)];
  }

 private:
  ConvContexts() {
    if (cudaGetDeviceCount(&count_) != cudaSuccess) {
      cudaGetLastError();
      count_ = 0;
    }
    once_ = std::make_unique<std::once_flag[]>(static_cast<std::size_t>(std::max(count_, 1)));
    ctx_.resize(static_cast<std::size_t>(std::max(count_, 0)));
  }

  int count_ = 0;
  std::unique_ptr<std::once_flag[]> once_;
  std::vector<std::unique_ptr<ConvDeviceContext>> ctx_;
};

}  // namespace

unsigned Launch::grid(std::int64_t n, int block) const {
  const std::int64_t blocks = (n + block - 1) / block;
  const std::int64_t cap = std::int64_t{sm_count} * 32;
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(blocks, cap)));
}

ConvCall::ConvCall() : ctx_(&ConvContexts::instance().get(magmadnn::cuda::current_device())) {
  lock_ = std::unique_lock<std::mutex>(ctx_->mutex);
  magmadnn::cuda::DeviceGuard guard(ctx_->device);
  // Inputs may still be being written by kernels on the backend's stream.
  cuda_backend().synchronize(ctx_->device);
}

ConvCall::~ConvCall() {
  if (!finished_) cudaStreamSynchronize(ctx_->stream.get());  // unwinding: never free memory kernels still use
  for (auto& [p, bytes] : scratch_) cuda_backend().deallocate(p, bytes, ctx_->device);
}

#if MAGMADNN_HAVE_CUDNN
cudnnHandle_t ConvCall::dnn() {
  if (!ctx_->dnn) {  // under ctx_->mutex, which this call holds
    cudnnHandle_t h = nullptr;
    MAGMADNN_CUDNN_CHECK(cudnnCreate(&h));
    ctx_->dnn.reset(h);
    MAGMADNN_CUDNN_CHECK(cudnnSetStream(h, ctx_->stream.get()));
  }
  return ctx_->dnn.get();
}
#endif

void* ConvCall::scratch(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = cuda_backend().allocate(bytes, ctx_->device);
  scratch_.emplace_back(p, bytes);
  return p;
}

void ConvCall::finish() {
  MAGMADNN_CUDA_CHECK(cudaStreamSynchronize(ctx_->stream.get()));
  finished_ = true;
}

}  // namespace magmadnn::conv::cuda
