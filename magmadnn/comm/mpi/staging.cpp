#include "magmadnn/comm/mpi/staging.h"

#include <algorithm>

#include "magmadnn/comm/mpi/device_copy.h"

namespace magmadnn::distributed::mpi_detail {

PinnedBlock::~PinnedBlock() { pool_->give_back(p_, bytes_); }

PinnedPool::~PinnedPool() {
  for (auto& [bytes, p] : free_) pinned_free(p);
}

std::shared_ptr<PinnedBlock> PinnedPool::take(std::size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->first >= bytes && (best == free_.end() || it->first < best->first)) best = it;
    if (best != free_.end()) {
      auto [size, p] = *best;
      free_.erase(best);
      return std::make_shared<PinnedBlock>(shared_from_this(), p, size);
    }
  }
  return std::make_shared<PinnedBlock>(shared_from_this(), pinned_allocate(bytes), bytes);
}

void PinnedPool::give_back(void* p, std::size_t bytes) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.emplace_back(bytes, p);
}

void Staged::copy_back() const {
  if (block) host_to_device(user, mpi, bytes);
}

Staged stage(PinnedPool& pool, const void* data, std::size_t bytes, Place place, bool read, bool direct) {
  Staged s;
  s.user = const_cast<void*>(data);
  s.mpi = s.user;
  s.bytes = bytes;
  if (place == Place::host || bytes == 0) return s;
  device_synchronize();
  if (direct) return s;
  s.block = pool.take(bytes);
  s.mpi = s.block->data();
  if (read) device_to_host(s.mpi, data, bytes);
  return s;
}

}  // namespace magmadnn::distributed::mpi_detail
