/// @file memory_pool.h
/// MemoryPool: a caching allocator over a "raw" allocator (cudaMalloc for a
/// GPU, aligned_alloc for the host), dMath's pooled memory. Freed blocks stay
/// in the pool and serve later requests of the same size class, so after the
/// first training step a model allocates no new memory: no cudaMalloc/cudaFree
/// (each of which synchronises the whole device), no page faults on the host.
///
/// Plain C++ with no CUDA header: the raw allocator is injected, so the
/// caching logic is unit-tested with a fake (tests/backend/test_memory_pool.cpp).
///
/// Requires: the raw allocate returns null on out-of-memory and throws
/// DeviceError for any other failure; raw free never throws.
/// Guarantees:
///  - sizes are rounded to a size class: requests up to kSmallLimit to a
///    multiple of kSmallGranule, larger ones to a multiple of kLargeGranule;
///  - a request is served from a cached block of its class, or of a larger
///    class wasting at most a quarter of the block; the raw allocator is
///    called only on a miss;
///  - on out-of-memory the whole cache is released and the raw allocation
///    retried once; if it fails again, DeviceError names the bytes requested,
///    in use and cached, and the device;
///  - blocks are never split or merged, so a pointer always frees the exact
///    block it came from; all methods are thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "magmadnn/backend/backend.h"

namespace magmadnn {

/// The system allocator a MemoryPool caches.
struct RawAllocator {
  /// Returns `bytes` of fresh memory, or null when out of memory.
  std::function<void*(std::size_t bytes)> allocate;
  /// Returns memory obtained from `allocate`; never throws.
  std::function<void(void* p)> free;
};

class MemoryPool {
 public:
  static constexpr std::size_t kSmallLimit = std::size_t{1} << 20;  ///< 1 MiB
  static constexpr std::size_t kSmallGranule = 512;
  static constexpr std::size_t kLargeGranule = std::size_t{2} << 20;  ///< 2 MiB

  /// `device_name` (e.g. "CUDA device 0") appears in out-of-memory messages.
  MemoryPool(RawAllocator raw, std::string device_name);
  /// Frees the cached blocks. Blocks still handed out are left alone: their
  /// owners may outlive the pool, and freeing under them would be worse.
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  /// A block of at least `bytes` (null for 0 bytes). Throws DeviceError when
  /// out of memory even after releasing the cache.
  void* allocate(std::size_t bytes);
  /// Returns a block from allocate() to the cache (null is ignored).
  void deallocate(void* p) noexcept;
  /// Frees every cached block through the raw allocator.
  void release_cached() noexcept;
  /// With caching off, deallocate() returns blocks to the raw allocator at
  /// once (and the cache is emptied now): every allocation is then a fresh
  /// raw one, which is what memory checkers (ASan, valgrind, compute-sanitizer)
  /// need to see use-after-free and overflows. On by default.
  void set_caching(bool on) noexcept;
  /// Counters; bytes are counted in whole blocks (rounded sizes).
  MemoryStats stats() const;
  /// Restarts peak_bytes_in_use from bytes_in_use.
  void reset_peak() noexcept;

  /// The size class of a request.
  static std::size_t round_size(std::size_t bytes) noexcept;

 private:
  void release_cached_locked() noexcept;

  RawAllocator raw_;
  std::string device_name_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;       // cached blocks by size
  std::unordered_map<void*, std::size_t> used_;  // handed-out blocks and their sizes
  MemoryStats stats_;
  bool caching_ = true;
};

}  // namespace magmadnn
