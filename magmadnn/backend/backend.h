/// @file backend.h
/// A Backend is one kind of device (the CPU, CUDA GPUs): its memory, its
/// copies, its arithmetic (Kernels<T>) and its synchronisation.
///
/// The core includes no device header: a backend is found at run time through
/// the registry (backend/registry.h). The CPU backend always exists; the CUDA
/// backend exists when the build has CUDA *and* the machine has a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "magmadnn/backend/kernels.h"
#include "magmadnn/core/types.h"

namespace magmadnn {

enum class DeviceKind : std::uint8_t { CPU = 0, CUDA = 1 };

/// Direction of a copy, as seen from the device backend.
enum class CopyKind : std::uint8_t { HostToHost, HostToDevice, DeviceToHost, DeviceToDevice };

/// Counters of a backend's memory pool (dMath's pooled GPU memory).
struct MemoryStats {
  std::uint64_t raw_allocations = 0;    ///< calls to the system allocator (cudaMalloc / aligned_alloc)
  std::uint64_t raw_frees = 0;          ///< memory returned to the system
  std::uint64_t pool_hits = 0;          ///< allocations served from the cache
  std::uint64_t bytes_in_use = 0;       ///< handed out and not yet returned
  std::uint64_t bytes_cached = 0;       ///< held by the pool, free for reuse
  std::uint64_t peak_bytes_in_use = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual DeviceKind kind() const noexcept = 0;
  /// "cpu", "cuda".
  virtual std::string name() const = 0;
  /// Number of devices of this kind (1 for the CPU).
  virtual int device_count() const noexcept = 0;
  /// Makes `device` current for the calling thread (no-op on the CPU).
  /// Throws DeviceError if it does not exist.
  virtual void set_device(device_t device) = 0;

  // -- memory --------------------------------------------------------------
  /// `bytes` of this backend's memory on `device`, 64-byte aligned, from the
  /// pool. Throws DeviceError (with the size and device) when out of memory.
  virtual void* allocate(std::size_t bytes, device_t device) = 0;
  /// Returns memory from allocate() to the pool.
  virtual void deallocate(void* p, std::size_t bytes, device_t device) noexcept = 0;
  /// Memory addressable from host and device (CUDA unified memory). The CPU
  /// backend throws NotSupportedError.
  virtual void* allocate_unified(std::size_t bytes, device_t device) = 0;
  virtual void deallocate_unified(void* p) noexcept = 0;
  /// Page-locked host memory for fast, asynchronous transfers (plain host
  /// memory on the CPU backend).
  virtual void* allocate_pinned(std::size_t bytes) = 0;
  virtual void deallocate_pinned(void* p) noexcept = 0;
  /// Frees cached, unused pool memory back to the system.
  virtual void release_cached_memory() noexcept = 0;
  virtual MemoryStats memory_stats(device_t device) const = 0;
  /// Restarts memory_stats' peak_bytes_in_use from the bytes in use now, to
  /// measure the peak of one span (a training step). The CPU backend's pool
  /// does; a backend that does not leaves its peak the process's.
  virtual void reset_peak_memory(device_t /*device*/) noexcept {}

  /// Copies `bytes`; complete when this returns.
  virtual void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, device_t device) = 0;
  /// Starts a copy on the backend's stream; complete after synchronize().
  virtual void copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind, device_t device) = 0;
  /// Asynchronously migrates unified memory to `device`, or to the host when
  /// `to_host` (CUDA_MANAGED prefetch). No-op on the CPU.
  virtual void prefetch_unified(const void* p, std::size_t bytes, device_t device, bool to_host) = 0;
  /// Waits for all work queued on `device`.
  virtual void synchronize(device_t device) = 0;

  // -- arithmetic -----------------------------------------------------------
  virtual Kernels<float>& kernels_f32() = 0;
  virtual Kernels<double>& kernels_f64() = 0;
  /// dst[i] = (dst_type) src[i] between any two float dtypes (f64, f32, f16, bf16).
  virtual void convert(dtype src_type, const void* src, dtype dst_type, void* dst, std::int64_t n) = 0;
};

/// Kernels<T> of a backend, for T = float or double.
template <typename T>
Kernels<T>& kernels(Backend& b);
template <>
inline Kernels<float>& kernels<float>(Backend& b) { return b.kernels_f32(); }
template <>
inline Kernels<double>& kernels<double>(Backend& b) { return b.kernels_f64(); }

}  // namespace magmadnn
