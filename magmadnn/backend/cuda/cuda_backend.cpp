// The CUDA backend: device memory from a caching pool per device, unified and
// pinned memory, copies on the per-device stream, and CudaKernels<T>.
//
// Pageable host memory (what the CPU backend and std::vector hand out) cannot
// be read by the copy engine directly; the driver then stages it through its
// own small pinned buffer, one chunk at a time, with the host waiting. For
// large transfers we stage through two 4 MiB pinned buffers of our own so
// that the host's memcpy of one chunk overlaps the DMA of the other.
#include "magmadnn/backend/cuda/cuda_backend.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "magmadnn/backend/cuda/cuda_check.h"
#include "magmadnn/backend/cuda/cuda_context.h"
#include "magmadnn/backend/cuda/cuda_kernels.h"
#include "magmadnn/backend/memory_pool.h"

namespace magmadnn {
namespace cuda {
namespace {

constexpr std::size_t kStageChunk = std::size_t{4} << 20;
// Below this, the driver's own staging is as fast and needs no locking.
constexpr std::size_t kStageThreshold = std::size_t{256} << 10;

bool is_pageable(const void* p) {
  cudaPointerAttributes attr{};
  const cudaError_t e = cudaPointerGetAttributes(&attr, p);
  if (e != cudaSuccess) {
    cudaGetLastError();  // not a CUDA pointer at all: plain host memory
    return true;
  }
  return attr.type == cudaMemoryTypeUnregistered;
}

// Two pinned chunks and the events that say when the copy engine is done
// with each, for one device.
class Staging {
 public:
  Staging() {
    for (int b = 0; b < 2; ++b) {
      void* p = nullptr;
      MAGMADNN_CUDA_CHECK(cudaMallocHost(&p, kStageChunk));
      buf_[b].reset(p);
      cudaEvent_t e = nullptr;
      MAGMADNN_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      ev_[b].reset(e);
    }
  }

  // Host -> device. Returns once the source has been read; the last chunks
  // may still be in flight on `stream` (they read our buffers, not the source).
  void to_device(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto* d = static_cast<char*>(dst);
    const auto* s = static_cast<const char*>(src);
    for (std::size_t off = 0, i = 0; off < bytes; off += kStageChunk, ++i) {
      const int b = static_cast<int>(i & 1);
      const std::size_t len = std::min(kStageChunk, bytes - off);
      MAGMADNN_CUDA_CHECK(cudaEventSynchronize(ev_[b].get()));  // the DMA out of this buffer is done
      std::memcpy(buf_[b].get(), s + off, len);
      MAGMADNN_CUDA_CHECK(cudaMemcpyAsync(d + off, buf_[b].get(), len, cudaMemcpyHostToDevice, stream));
      MAGMADNN_CUDA_CHECK(cudaEventRecord(ev_[b].get(), stream));
    }
  }

  // Device -> host; complete on return (the host writes the destination).
  void to_host(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto* d = static_cast<char*>(dst);
    const auto* s = static_cast<const char*>(src);
    const std::size_t chunks = (bytes + kStageChunk - 1) / kStageChunk;
    auto issue = [&](std::size_t i) {
      const int b = static_cast<int>(i & 1);
      const std::size_t off = i * kStageChunk, len = std::min(kStageChunk, bytes - off);
      MAGMADNN_CUDA_CHECK(cudaEventSynchronize(ev_[b].get()));  // an earlier upload may still read it
      MAGMADNN_CUDA_CHECK(cudaMemcpyAsync(buf_[b].get(), s + off, len, cudaMemcpyDeviceToHost, stream));
      MAGMADNN_CUDA_CHECK(cudaEventRecord(ev_[b].get(), stream));
    };
    issue(0);
    if (chunks > 1) issue(1);
    for (std::size_t i = 0; i < chunks; ++i) {
      const int b = static_cast<int>(i & 1);
      const std::size_t off = i * kStageChunk, len = std::min(kStageChunk, bytes - off);
      MAGMADNN_CUDA_CHECK(cudaEventSynchronize(ev_[b].get()));
      std::memcpy(d + off, buf_[b].get(), len);
      if (i + 2 < chunks) issue(i + 2);  // refill this buffer while the other one drains
    }
  }

 private:
  std::mutex mutex_;
  UniquePinnedMemory buf_[2];
  UniqueEvent ev_[2];
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int count)
      : count_(count),
        contexts_(count),
        staging_once_(std::make_unique<std::once_flag[]>(static_cast<std::size_t>(count))),
        staging_(static_cast<std::size_t>(count)),
        f32_(contexts_),
        f64_(contexts_) {
    pools_.reserve(static_cast<std::size_t>(count));
    for (int d = 0; d < count; ++d) {
      RawAllocator raw;
      raw.allocate = [d](std::size_t bytes) -> void* {
        DeviceGuard guard(d);
        void* p = nullptr;
        const cudaError_t e = cudaMalloc(&p, bytes);
        if (e == cudaErrorMemoryAllocation) {
          cudaGetLastError();  // clear it, or the next MAGMADNN_KERNEL_CHECK would report it
          return nullptr;      // the pool releases its cache and retries
        }
        MAGMADNN_CUDA_CHECK(e);
        return p;
      };
      raw.free = [](void* p) { cudaFree(p); };  // UVA: any current device frees it
      pools_.push_back(std::make_unique<MemoryPool>(std::move(raw), "CUDA device " + std::to_string(d)));
    }
  }

  DeviceKind kind() const noexcept override { return DeviceKind::CUDA; }
  std::string name() const override { return "cuda"; }
  int device_count() const noexcept override { return count_; }
  void set_device(device_t device) override {
    check_device(device);
    MAGMADNN_CUDA_CHECK(cudaSetDevice(device));
  }

  // -- memory ------------------------------------------------------------------
  void* allocate(std::size_t bytes, device_t device) override {
    check_device(device);
    return pools_[static_cast<std::size_t>(device)]->allocate(bytes);
  }
  void deallocate(void* p, std::size_t, device_t device) noexcept override {
    if (p == nullptr || device < 0 || device >= count_) return;
    pools_[static_cast<std::size_t>(device)]->deallocate(p);
  }
  void* allocate_unified(std::size_t bytes, device_t device) override {
    check_device(device);
    if (bytes == 0) return nullptr;
    DeviceGuard guard(device);
    void* p = nullptr;
    const cudaError_t e = cudaMallocManaged(&p, bytes, cudaMemAttachGlobal);
    if (e != cudaSuccess) {
      cudaGetLastError();
      MAGMADNN_THROW(DeviceError, "cudaMallocManaged of " << bytes << " bytes on CUDA device " << device
                                                          << " failed: " << cuda::detail::cuda_error_text(e));
    }
    return p;
  }
  void deallocate_unified(void* p) noexcept override {
    if (p) cudaFree(p);
  }
  void* allocate_pinned(std::size_t bytes) override {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    const cudaError_t e = cudaMallocHost(&p, bytes);
    if (e != cudaSuccess) {
      cudaGetLastError();
      MAGMADNN_THROW(DeviceError,
                     "cudaMallocHost of " << bytes << " pinned bytes failed: " << cuda::detail::cuda_error_text(e));
    }
    return p;
  }
  void deallocate_pinned(void* p) noexcept override {
    if (p) cudaFreeHost(p);
  }
  void release_cached_memory() noexcept override {
    for (auto& pool : pools_) pool->release_cached();
  }
  MemoryStats memory_stats(device_t device) const override {
    check_device(device);
    return pools_[static_cast<std::size_t>(device)]->stats();
  }

  // -- copies ------------------------------------------------------------------
  void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, device_t device) override {
    if (bytes == 0) return;
    DeviceContext& c = enqueue_copy(dst, src, bytes, kind, device);
    MAGMADNN_CUDA_CHECK(cudaStreamSynchronize(c.stream.get()));
  }
  void copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind, device_t device) override {
    if (bytes == 0) return;
    enqueue_copy(dst, src, bytes, kind, device);
  }
  void prefetch_unified(const void* p, std::size_t bytes, device_t device, bool to_host) override {
    if (p == nullptr || bytes == 0) return;
    DeviceGuard guard(device);
    DeviceContext& c = contexts_.get(device);
    // Without concurrent managed access (some platforms), pages migrate on
    // demand and prefetching is not available: nothing to do, not an error.
    if (!c.concurrent_managed_access) return;
    cudaMemLocation loc{};
    if (to_host) {
      loc.type = cudaMemLocationTypeHost;
      loc.id = 0;
    } else {
      loc.type = cudaMemLocationTypeDevice;
      loc.id = device;
    }
    MAGMADNN_CUDA_CHECK(cudaMemPrefetchAsync(p, bytes, loc, 0, c.stream.get()));
  }
  void synchronize(device_t device) override {
    check_device(device);
    // No context: nothing was ever queued on this device by us.
    if (DeviceContext* c = contexts_.find(device)) {
      DeviceGuard guard(device);
      MAGMADNN_CUDA_CHECK(cudaStreamSynchronize(c->stream.get()));
    }
  }

  // -- arithmetic ---------------------------------------------------------------
  Kernels<float>& kernels_f32() override { return f32_; }
  Kernels<double>& kernels_f64() override { return f64_; }
  void convert(dtype src_type, const void* src, dtype dst_type, void* dst, std::int64_t n) override {
    convert_on_device(src_type, src, dst_type, dst, n, contexts_.current());
  }

 private:
  void check_device(device_t device) const {
    MAGMADNN_CHECK(device >= 0 && device < count_, DeviceError,
                   "CUDA device " << device << " requested, but there are " << count_ << " CUDA devices");
  }

  Staging& staging(int device) {
    std::call_once(staging_once_[device],
                   [&] { staging_[static_cast<std::size_t>(device)] = std::make_unique<Staging>(); });
    return *staging_[static_cast<std::size_t>(device)];
  }

  // Queues the copy on `device`'s stream; a staged download is complete on return.
  DeviceContext& enqueue_copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, device_t device) {
    check_device(device);
    DeviceGuard guard(device);
    DeviceContext& c = contexts_.get(device);
    cudaStream_t s = c.stream.get();
    switch (kind) {
      case CopyKind::HostToHost:
        // Either side may be unified memory that queued kernels still write.
        MAGMADNN_CUDA_CHECK(cudaStreamSynchronize(s));
        std::memmove(dst, src, bytes);
        break;
      case CopyKind::HostToDevice:
        if (bytes >= kStageThreshold && is_pageable(src))
          staging(device).to_device(dst, src, bytes, s);
        else
          MAGMADNN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
        break;
      case CopyKind::DeviceToHost:
        if (bytes >= kStageThreshold && is_pageable(dst))
          staging(device).to_host(dst, src, bytes, s);
        else
          MAGMADNN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
        break;
      case CopyKind::DeviceToDevice:
        // cudaMemcpyDefault: unified addressing finds each side (peer copies included).
        MAGMADNN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
        break;
    }
    return c;
  }

  int count_;
  Contexts contexts_;
  std::vector<std::unique_ptr<MemoryPool>> pools_;
  std::unique_ptr<std::once_flag[]> staging_once_;
  std::vector<std::unique_ptr<Staging>> staging_;
  CudaKernels<float> f32_;
  CudaKernels<double> f64_;
};

}  // namespace
}  // namespace cuda

std::unique_ptr<Backend> make_cuda_backend(std::string* why_not) {
  auto say = [why_not](std::string s) {
    if (why_not) *why_not = std::move(s);
  };
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    say(std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorString(e));
    return nullptr;
  }
  if (count <= 0) {
    say("no CUDA device: cudaGetDeviceCount found 0 devices");
    return nullptr;
  }
  const cudaError_t img = cuda::probe_kernel_image();
  if (img != cudaSuccess) {
    cudaGetLastError();
    cudaDeviceProp prop{};
    std::string device = "CUDA device 0";
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
      device += " (" + std::string(prop.name) + ", compute capability " + std::to_string(prop.major) + "." +
                std::to_string(prop.minor) + ")";
    }
    cudaGetLastError();
    const bool wrong_arch = img == cudaErrorNoKernelImageForDevice || img == cudaErrorInvalidDeviceFunction;
    say(device +
        (wrong_arch ? " cannot run this build's kernels (rebuild with -DCMAKE_CUDA_ARCHITECTURES "
                      "naming its compute capability): "
                    : " is not usable: ") +
        cuda::detail::cuda_error_text(img));
    return nullptr;
  }
  try {
    return std::make_unique<cuda::CudaBackend>(count);
  } catch (const std::exception& ex) {
    say(std::string("CUDA backend could not start: ") + ex.what());
    return nullptr;
  }
}

}  // namespace magmadnn

// The module's entry point (core/module.h, backend/registry.cpp): the
// registry owns the backend for the rest of the process.
extern "C" magmadnn::Backend* magmadnn_cuda_make_backend(std::string* why_not) {
  try {
    return magmadnn::make_cuda_backend(why_not).release();
  } catch (const std::exception& e) {
    if (why_not) *why_not = std::string("the CUDA backend failed to start: ") + e.what();
    return nullptr;
  }
}
