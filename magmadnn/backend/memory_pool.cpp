#include "magmadnn/backend/memory_pool.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "magmadnn/core/errors.h"

namespace magmadnn {

MemoryPool::MemoryPool(RawAllocator raw, std::string device_name)
    : raw_(std::move(raw)), device_name_(std::move(device_name)) {
  MAGMADNN_CHECK(raw_.allocate && raw_.free, ValueError, "MemoryPool needs a raw allocate and free");
}

MemoryPool::~MemoryPool() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

std::size_t MemoryPool::round_size(std::size_t bytes) noexcept {
  const std::size_t g = bytes <= kSmallLimit ? kSmallGranule : kLargeGranule;
  return (bytes + g - 1) / g * g;
}

void* MemoryPool::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const std::size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);

  // Best fit among cached blocks, but never one that wastes over a quarter of
  // itself: a big block kept for a small request would starve big requests.
  auto it = free_.lower_bound(size);
  if (it != free_.end() && it->first - size <= it->first / 4) {
    const std::size_t block = it->first;
    void* p = it->second;
    free_.erase(it);
    used_.emplace(p, block);
    stats_.pool_hits += 1;
    stats_.bytes_cached -= block;
    stats_.bytes_in_use += block;
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
    return p;
  }

  void* p = raw_.allocate(size);
  std::uint64_t cached_before_retry = 0;
  if (p == nullptr && !free_.empty()) {
    // Cached blocks of other sizes may be what stands between us and success.
    cached_before_retry = stats_.bytes_cached;
    release_cached_locked();
    p = raw_.allocate(size);
  }
  MAGMADNN_CHECK(p != nullptr, DeviceError,
                 "out of memory on " << device_name_ << ": requested " << bytes << " bytes (block of " << size << "), "
                                     << stats_.bytes_in_use << " bytes in use, " << cached_before_retry
                                     << " bytes cached were released before one retry");
  stats_.raw_allocations += 1;
  used_.emplace(p, size);
  stats_.bytes_in_use += size;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return p;
}

void MemoryPool::deallocate(void* p) noexcept {
  if (p == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = used_.find(p);
  assert(it != used_.end() && "MemoryPool::deallocate of a pointer it did not hand out (or a double free)");
  if (it == used_.end()) return;  // never free what we do not own
  const std::size_t block = it->second;
  used_.erase(it);
  stats_.bytes_in_use -= block;
  if (!caching_) {
    raw_.free(p);
    stats_.raw_frees += 1;
    return;
  }
  stats_.bytes_cached += block;
  free_.emplace(block, p);
}

void MemoryPool::set_caching(bool on) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  caching_ = on;
  if (!on) release_cached_locked();
}

void MemoryPool::release_cached() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

void MemoryPool::release_cached_locked() noexcept {
  for (const auto& [size, p] : free_) {
    raw_.free(p);
    stats_.raw_frees += 1;
  }
  free_.clear();
  stats_.bytes_cached = 0;
}

void MemoryPool::reset_peak() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

MemoryStats MemoryPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace magmadnn
