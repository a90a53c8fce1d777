/// @file memory_manager.h
/// MemoryManager<T>: a fixed-size array of T in one of four kinds of memory
/// (paper §2.1), with every copy between them.
///
/// - HOST keeps a host array; DEVICE a GPU array from the device pool.
/// - MANAGED keeps a host and a device copy and a validity flag for each. A
///   writer marks the other side stale; a reader of a stale side copies once.
///   So data is moved only when the other side actually reads it. Without a
///   GPU (no CUDA in the build or no device), MANAGED is host memory.
/// - CUDA_MANAGED is CUDA unified memory; it can be prefetched either way.
///
/// Requires: T trivially copyable. DEVICE and CUDA_MANAGED require a GPU; on a
/// machine without one the constructor throws DeviceError saying why.
/// Guarantees: every copy_from between any two memory types is correct and
/// bounds-checked (IndexError names offsets and sizes); memory is returned to
/// its pool on destruction; no operation leaves both MANAGED sides stale.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>

#include "magmadnn/core/types.h"

namespace magmadnn {

class Backend;

template <typename T>
class MemoryManager {
  static_assert(std::is_trivially_copyable_v<T>, "MemoryManager<T> needs a trivially copyable T");

 public:
  /// Allocates `size` elements of `mem_type` memory on `device_id` (contents undefined).
  MemoryManager(std::size_t size, memory_t mem_type, device_t device_id = 0);
  /// HOST memory that belongs to someone else (a NumPy array, a DLPack
  /// producer's buffer): `size` elements at `host`, which must stay valid
  /// while `keep_alive` is held. The manager holds `keep_alive` and releases
  /// it on destruction instead of freeing `host`. Requires `host` aligned
  /// for T (ValueError otherwise) and non-null when size > 0.
  MemoryManager(T* host, std::size_t size, std::shared_ptr<void> keep_alive);
  ~MemoryManager();
  MemoryManager(const MemoryManager&) = delete;
  MemoryManager& operator=(const MemoryManager&) = delete;

  std::size_t get_size() const noexcept { return size_; }
  memory_t get_memory_type() const noexcept { return mem_type_; }
  device_t get_device_id() const noexcept { return device_id_; }

  // -- copies ---------------------------------------------------------------
  /// Copies all of `src` into the first src.get_size() elements. Throws
  /// IndexError if `src` is larger.
  void copy_from(const MemoryManager& src);
  /// Copies `count` elements from src[src_offset..] into this[dst_offset..],
  /// for any pair of memory types. Throws IndexError when a range is outside.
  void copy_from(const MemoryManager& src, std::size_t src_offset, std::size_t dst_offset, std::size_t count);
  /// Copies `count` host elements into this[dst_offset..].
  void copy_from_host(const T* src, std::size_t count, std::size_t dst_offset = 0);
  /// Copies `count` elements from this[src_offset..] to host memory `dst`.
  void copy_to_host(T* dst, std::size_t count, std::size_t src_offset = 0) const;

  // -- elements (slow on a GPU: one transfer each) -------------------------------
  T get(std::size_t i) const;
  void set(std::size_t i, T value);

  // -- raw pointers -----------------------------------------------------------
  /// True when arithmetic on this memory runs on the GPU: DEVICE and
  /// CUDA_MANAGED always, MANAGED when a GPU is present.
  bool on_device() const noexcept { return on_device_; }
  /// Pointer for reading on the compute side (host or device per on_device()).
  const T* data() const;
  /// Pointer for writing on the compute side; marks the other MANAGED side stale.
  T* mutable_data();
  /// Host pointer for reading; for MANAGED copies a stale host side first.
  /// Throws DeviceError for DEVICE memory.
  const T* host_data() const;
  /// Host pointer for writing; for MANAGED also marks the device side stale.
  T* mutable_host_data();
  /// Device pointer for reading (MANAGED: copies a stale device side first).
  /// Throws DeviceError for HOST memory or without a GPU.
  const T* device_data() const;
  /// Device pointer for writing; for MANAGED also marks the host side stale.
  T* mutable_device_data();

  // MagmaDNN v1 names. Each hands out a writable pointer (the other MANAGED
  // side becomes stale).
  T* get_host_ptr() { return mutable_host_data(); }
  T* get_device_ptr() { return mutable_device_data(); }
  T* get_cuda_managed_ptr();
  T* get_ptr() { return mutable_data(); }

  /// Changes whenever the contents may have changed: construction, every
  /// writable pointer handed out, every copy into the array and set() take a
  /// fresh value, unique across all arrays of the process. A reader that
  /// caches something derived from the contents (a bf16 copy) compares
  /// stamps to know whether it is still current. Writes through a pointer
  /// kept from an earlier mutable_*() call are not seen: take the pointer
  /// again for each write.
  std::uint64_t write_stamp() const noexcept { return stamp_; }

  /// MANAGED: makes the host (device_to_host) or the device side current now.
  /// Other memory types: waits for queued work.
  void sync(bool device_to_host = true);
  /// Starts moving the data towards the host or the device without waiting
  /// (MANAGED: asynchronous copy of a stale side; CUDA_MANAGED: unified memory
  /// prefetch). Complete once the device is synchronised or the side is read.
  void prefetch(bool to_host);

 private:
  Backend& device_backend() const;
  void ensure_device_allocated() const;
  void make_host_valid() const;
  void make_device_valid() const;
  void touch() noexcept;

  std::size_t size_;
  memory_t mem_type_;
  device_t device_id_;
  bool on_device_ = false;
  // mutable: a const read of a MANAGED array may refresh its stale side.
  mutable T* host_ = nullptr;
  mutable T* device_ = nullptr;
  mutable bool host_valid_ = true;
  mutable bool device_valid_ = true;
  mutable bool device_pending_ = false;  // an async copy towards the host/device is in flight
  std::uint64_t stamp_ = 0;              // see write_stamp()
  std::shared_ptr<void> borrowed_;       // the owner of host_ when the memory is borrowed
};

}  // namespace magmadnn
