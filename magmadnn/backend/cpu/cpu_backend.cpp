#include "magmadnn/backend/cpu/cpu_backend.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>

#include "magmadnn/backend/cpu/cpu_bf16.h"
#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/memory_pool.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/core/half.h"

namespace magmadnn {
namespace {

constexpr std::size_t kAlignment = 64;  // a cache line; also what AVX-512 loads like

template <typename D, typename S>
void convert_loop(const S* src, D* dst, std::int64_t n) {
#pragma omp parallel for if (n > cpu::kParallelThreshold) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<S, double> || std::is_same_v<D, double>) {
      dst[i] = static_cast<D>(static_cast<double>(src[i]));
    } else {
      dst[i] = static_cast<D>(static_cast<float>(src[i]));
    }
  }
}

template <typename S>
void convert_from(const S* src, dtype dst_type, void* dst, std::int64_t n) {
  if constexpr (std::is_same_v<S, float>) {
    if (dst_type == dtype::bf16) {  // mixed precision's casts: the vectorised rounding
      cpu::round_to_bf16(src, static_cast<bfloat16*>(dst), n);
      return;
    }
  }
  switch (dst_type) {
    case dtype::f32: convert_loop(src, static_cast<float*>(dst), n); return;
    case dtype::f64: convert_loop(src, static_cast<double*>(dst), n); return;
    case dtype::f16: convert_loop(src, static_cast<half*>(dst), n); return;
    case dtype::bf16: convert_loop(src, static_cast<bfloat16*>(dst), n); return;
    default: MAGMADNN_THROW(NotSupportedError, "convert to " << dtype_name(dst_type));
  }
}

class CpuBackend final : public Backend {
 public:
  // MAGMADNN_NO_MEMORY_CACHING=1 turns the host cache off (for memory checkers).
  CpuBackend() {
    const char* off = std::getenv("MAGMADNN_NO_MEMORY_CACHING");
    if (off && *off && std::string(off) != "0") pool_.set_caching(false);
  }
  DeviceKind kind() const noexcept override { return DeviceKind::CPU; }
  std::string name() const override { return "cpu"; }
  int device_count() const noexcept override { return 1; }
  void set_device(device_t) override {}

  // Host tensors come from a caching pool, as device tensors do: a training
  // step frees and re-allocates the same sizes every time, and going to the
  // system each time costs page faults and zeroing of fresh pages (measured:
  // ~4% of an MLP step) for buffers of a few hundred KiB and more.
  void* allocate(std::size_t bytes, device_t) override { return pool_.allocate(bytes); }
  void deallocate(void* p, std::size_t, device_t) noexcept override { pool_.deallocate(p); }
  void* allocate_unified(std::size_t, device_t) override {
    MAGMADNN_THROW(NotSupportedError, "unified (CUDA_MANAGED) memory needs the CUDA backend");
  }
  void deallocate_unified(void*) noexcept override {}
  void* allocate_pinned(std::size_t bytes) override {
    void* p = std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    MAGMADNN_CHECK(p != nullptr || bytes == 0, Error, "out of host memory allocating " << bytes << " bytes");
    return p;
  }
  void deallocate_pinned(void* p) noexcept override { std::free(p); }
  void release_cached_memory() noexcept override { pool_.release_cached(); }
  MemoryStats memory_stats(device_t) const override { return pool_.stats(); }
  void reset_peak_memory(device_t) noexcept override { pool_.reset_peak(); }

  void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, device_t) override {
    MAGMADNN_CHECK(kind == CopyKind::HostToHost, NotSupportedError, "the CPU backend copies host memory only");
    if (bytes) std::memmove(dst, src, bytes);
  }
  void copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind, device_t device) override {
    copy(dst, src, bytes, kind, device);
  }
  void prefetch_unified(const void*, std::size_t, device_t, bool) override {}
  void synchronize(device_t) override {}

  Kernels<float>& kernels_f32() override { return f32_; }
  Kernels<double>& kernels_f64() override { return f64_; }

  void convert(dtype src_type, const void* src, dtype dst_type, void* dst, std::int64_t n) override {
    switch (src_type) {
      case dtype::f32: convert_from(static_cast<const float*>(src), dst_type, dst, n); return;
      case dtype::f64: convert_from(static_cast<const double*>(src), dst_type, dst, n); return;
      case dtype::f16: convert_from(static_cast<const half*>(src), dst_type, dst, n); return;
      case dtype::bf16: convert_from(static_cast<const bfloat16*>(src), dst_type, dst, n); return;
      default: MAGMADNN_THROW(NotSupportedError, "convert from " << dtype_name(src_type));
    }
  }

 private:
  cpu::CpuKernels<float> f32_;
  cpu::CpuKernels<double> f64_;
  MemoryPool pool_{RawAllocator{[](std::size_t bytes) { return std::aligned_alloc(kAlignment, bytes); },
                                [](void* p) { std::free(p); }},
                    "host memory"};
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace magmadnn
