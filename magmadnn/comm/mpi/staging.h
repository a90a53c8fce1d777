/// @file staging.h
/// Device buffers for an MPI that cannot read device memory: a cache of
/// pinned host blocks (allocated once, reused by later operations, freed
/// with the communicator) and Staged, one buffer as MPI sees it.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "magmadnn/comm/communicator.h"

namespace magmadnn::distributed::mpi_detail {

class PinnedPool;

/// A pinned block on loan; returns to its pool when released.
class PinnedBlock {
 public:
  PinnedBlock(std::shared_ptr<PinnedPool> pool, void* p, std::size_t bytes) : pool_(std::move(pool)), p_(p), bytes_(bytes) {}
  ~PinnedBlock();
  PinnedBlock(const PinnedBlock&) = delete;
  PinnedBlock& operator=(const PinnedBlock&) = delete;
  void* data() const noexcept { return p_; }

 private:
  std::shared_ptr<PinnedPool> pool_;
  void* p_;
  std::size_t bytes_;
};

class PinnedPool : public std::enable_shared_from_this<PinnedPool> {
 public:
  ~PinnedPool();
  /// A block of at least `bytes`: the smallest free one that fits, else a new one.
  std::shared_ptr<PinnedBlock> take(std::size_t bytes);
  void give_back(void* p, std::size_t bytes) noexcept;

 private:
  std::mutex mutex_;
  std::vector<std::pair<std::size_t, void*>> free_;
};

/// One buffer as MPI sees it.
struct Staged {
  void* mpi = nullptr;                   // the pointer handed to MPI
  void* user = nullptr;                  // the caller's pointer
  std::size_t bytes = 0;
  std::shared_ptr<PinnedBlock> block;    // set when staged through host memory
  /// Copies the staged result into the caller's device buffer (no-op otherwise).
  void copy_back() const;
};

/// Prepares `data` (`bytes` at `place`) for MPI. Host memory is used as it
/// is. Device memory is used directly when `direct` (CUDA-aware MPI, after
/// the device has finished its queued work), else copied to a pinned block
/// first when `read` (MPI reads it).
Staged stage(PinnedPool& pool, const void* data, std::size_t bytes, Place place, bool read, bool direct);

}  // namespace magmadnn::distributed::mpi_detail
