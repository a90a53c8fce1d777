/// @file cuda_context.h
/// Per-device state of the CUDA backend: one non-blocking stream, one cuBLAS
/// and one cuBLASLt handle bound to it, and the cuBLASLt workspace. Created on
/// first use of a device, so a process that touches only GPU 0 never creates
/// a context on the others. Every kernel and library call of the backend is
/// queued on the stream of the current device, which orders them.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace magmadnn::cuda {

// -- RAII owners of CUDA handles (unique_ptr over the opaque handle structs) --
struct StreamDeleter {
  void operator()(CUstream_st* s) const noexcept { cudaStreamDestroy(s); }
};
struct EventDeleter {
  void operator()(CUevent_st* e) const noexcept { cudaEventDestroy(e); }
};
struct CublasDeleter {
  void operator()(cublasContext* h) const noexcept { cublasDestroy(h); }
};
struct CublasLtDeleter {
  void operator()(cublasLtContext* h) const noexcept { cublasLtDestroy(h); }
};
struct DeviceFree {
  void operator()(void* p) const noexcept { cudaFree(p); }
};
struct PinnedFree {
  void operator()(void* p) const noexcept { cudaFreeHost(p); }
};
using UniqueStream = std::unique_ptr<CUstream_st, StreamDeleter>;
using UniqueEvent = std::unique_ptr<CUevent_st, EventDeleter>;
using UniqueCublas = std::unique_ptr<cublasContext, CublasDeleter>;
using UniqueCublasLt = std::unique_ptr<cublasLtContext, CublasLtDeleter>;
using UniqueDeviceMemory = std::unique_ptr<void, DeviceFree>;
using UniquePinnedMemory = std::unique_ptr<void, PinnedFree>;

/// Makes `device` current for its lifetime and restores the previous one
/// (calls that take a device argument must not move the caller's device).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  bool changed_ = false;
};

/// The current device of the calling thread (cudaGetDevice, checked).
int current_device();

struct DeviceContext {
  int device = 0;
  int sm_count = 1;
  bool concurrent_managed_access = false;  // unified-memory prefetch is supported
  UniqueStream stream;
  UniqueCublas blas;
  UniqueCublasLt lt;
  UniqueDeviceMemory lt_workspace;
  std::size_t lt_workspace_bytes = 0;
  // Partial results of multi-kernel reductions. Work on the stream is ordered,
  // but two host threads could interleave their launches: a user holds
  // scratch_mutex from the first launch to the last.
  UniqueDeviceMemory scratch;
  std::size_t scratch_bytes = 0;
  std::mutex scratch_mutex;
};

/// The contexts of all devices, each created on first use (thread-safe).
class Contexts {
 public:
  explicit Contexts(int device_count);
  int device_count() const noexcept { return count_; }
  /// The context of `device`; throws DeviceError for a device that does not exist.
  DeviceContext& get(int device);
  /// The context of the calling thread's current device.
  DeviceContext& current() { return get(current_device()); }
  /// The context of `device` if it was created, else null (never creates).
  DeviceContext* find(int device) noexcept;

 private:
  int count_;
  std::unique_ptr<std::once_flag[]> once_;
  std::vector<std::unique_ptr<DeviceContext>> ctx_;       // owners, written once inside once_[d]
  std::unique_ptr<std::atomic<DeviceContext*>[]> ready_;  // published for find()
};

}  // namespace magmadnn::cuda
