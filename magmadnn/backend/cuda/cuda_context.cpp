#include "magmadnn/backend/cuda/cuda_context.h"

#include "magmadnn/backend/cuda/cuda_check.h"

namespace magmadnn::cuda {

namespace {
// cuBLASLt's recommended workspace on Hopper; bigger lets it pick split-K and
// stream-K kernels for the fused bias/activation products.
constexpr std::size_t kLtWorkspaceBytes = std::size_t{32} << 20;
constexpr std::size_t kScratchBytes = std::size_t{1} << 20;
}  // namespace

int current_device() {
  int d = 0;
  MAGMADNN_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

DeviceGuard::DeviceGuard(int device) {
  previous_ = current_device();
  if (previous_ != device) {
    MAGMADNN_CUDA_CHECK(cudaSetDevice(device));
    changed_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (changed_) cudaSetDevice(previous_);  // cannot throw from a destructor; the device existed before
}

Contexts::Contexts(int device_count)
    : count_(device_count),
      once_(std::make_unique<std::once_flag[]>(static_cast<std::size_t>(device_count > 0 ? device_count : 1))),
      ctx_(static_cast<std::size_t>(device_count > 0 ? device_count : 0)),
      ready_(std::make_unique<std::atomic<DeviceContext*>[]>(
          static_cast<std::size_t>(device_count > 0 ? device_count : 1))) {
  for (int d = 0; d < (device_count > 0 ? device_count : 1); ++d) ready_[d].store(nullptr);
}

DeviceContext* Contexts::find(int device) noexcept {
  if (device < 0 || device >= count_) return nullptr;
  return ready_[device].load(std::memory_order_acquire);
}

DeviceContext& Contexts::get(int device) {
  MAGMADNN_CHECK(device >= 0 && device < count_, DeviceError,
                 "CUDA device " << device << " requested, but there are " << count_ << " CUDA devices");
  if (DeviceContext* c = ready_[device].load(std::memory_order_acquire)) return *c;
  // call_once: a throwing creation leaves the flag unset, so a later call retries.
  std::call_once(once_[device], [&] {
    DeviceGuard guard(device);
    auto c = std::make_unique<DeviceContext>();
    c->device = device;
    MAGMADNN_CUDA_CHECK(cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, device));
    int cma = 0;
    MAGMADNN_CUDA_CHECK(cudaDeviceGetAttribute(&cma, cudaDevAttrConcurrentManagedAccess, device));
    c->concurrent_managed_access = cma != 0;

    // Non-blocking: our stream must not serialise with the legacy default
    // stream that other libraries in the process may use.
    cudaStream_t s = nullptr;
    MAGMADNN_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    c->stream.reset(s);

    cublasHandle_t h = nullptr;
    MAGMADNN_CUBLAS_CHECK(cublasCreate(&h));
    c->blas.reset(h);
    MAGMADNN_CUBLAS_CHECK(cublasSetStream(h, s));
    MAGMADNN_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));

    cublasLtHandle_t lt = nullptr;
    MAGMADNN_CUBLAS_CHECK(cublasLtCreate(&lt));
    c->lt.reset(lt);

    void* ws = nullptr;
    MAGMADNN_CUDA_CHECK(cudaMalloc(&ws, kLtWorkspaceBytes));
    c->lt_workspace.reset(ws);
    c->lt_workspace_bytes = kLtWorkspaceBytes;

    void* scratch = nullptr;
    MAGMADNN_CUDA_CHECK(cudaMalloc(&scratch, kScratchBytes));
    c->scratch.reset(scratch);
    c->scratch_bytes = kScratchBytes;

    ctx_[static_cast<std::size_t>(device)] = std::move(c);
    ready_[device].store(ctx_[static_cast<std::size_t>(device)].get(), std::memory_order_release);
  });
  return *ready_[device].load(std::memory_order_acquire);
}

}  // namespace magmadnn::cuda
