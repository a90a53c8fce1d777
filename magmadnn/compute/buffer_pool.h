/// @file buffer_pool.h
/// op::BufferPool<T>: a per-graph free list of forward output buffers, the
/// storage side of buffer reuse (see inference_plan.h for who returns
/// buffers and when).
///
/// A node with a pool attached (Operation::set_buffer_pool) takes its output
/// buffer from the pool whenever it needs a new one; an evaluator that knows a
/// node's value is dead hands the buffer back (Operation::release_output), and
/// a later node of the same size gets it instead of a fresh allocation.
///
/// Requirements: a buffer handed back must not be aliased by a live view
/// (the evaluator checks this before releasing). Buffers are matched by
/// element count, memory type and device, and reshaped to the request.
/// Guarantees: acquire() allocates only when no idle buffer fits, and counts
/// every allocation; the counters below describe buffers lent through the
/// pool only (nodes that allocate by other means are not counted).
/// Not thread-safe: one graph is evaluated by one thread at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "magmadnn/tensor/tensor.h"

namespace magmadnn::op {

/// Counters of one pool.
struct BufferStats {
  std::uint64_t allocations = 0;      ///< buffers the pool had to allocate
  std::uint64_t reuses = 0;           ///< requests served from idle buffers
  std::size_t in_use_bytes = 0;       ///< bytes currently lent to nodes
  std::size_t peak_in_use_bytes = 0;  ///< the most bytes lent at once
  std::size_t idle_bytes = 0;         ///< bytes waiting in the free list
};

template <typename T>
class BufferPool {
 public:
  /// A buffer of `shape` in `mem` memory on `device`: an idle one of the same
  /// size if there is one, else a new allocation. Contents are undefined.
  Tensor<T> acquire(const Shape& shape, memory_t mem, device_t device) {
    const std::size_t bytes = bytes_of(shape.numel());
    auto it = std::find_if(idle_.begin(), idle_.end(), [&](const Tensor<T>& t) {
      return t.size() == shape.numel() && t.get_memory_type() == mem && t.get_device_id() == device;
    });
    Tensor<T> out;
    if (it != idle_.end()) {
      out = std::move(*it);
      idle_.erase(it);
      out.reshape(shape);
      stats_.idle_bytes -= bytes;
      ++stats_.reuses;
    } else {
      out = Tensor<T>(shape, mem, device);
      ++stats_.allocations;
    }
    stats_.in_use_bytes += bytes;
    stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
    return out;
  }

  /// Takes back a buffer whose value is dead. Empty tensors are ignored.
  void release(Tensor<T>&& t) {
    if (t.empty()) return;
    const std::size_t bytes = bytes_of(t.size());
    // A buffer that was not lent by this pool (a node that allocates by other
    // means) still becomes reusable; only lent bytes leave in_use.
    stats_.in_use_bytes -= std::min(stats_.in_use_bytes, bytes);
    stats_.idle_bytes += bytes;
    idle_.push_back(std::move(t));
  }

  const BufferStats& stats() const noexcept { return stats_; }
  /// Zeroes the event counters (allocations, reuses) and restarts the peak
  /// from the bytes lent now; the buffers themselves are kept.
  void reset_counters() noexcept {
    stats_.allocations = 0;
    stats_.reuses = 0;
    stats_.peak_in_use_bytes = stats_.in_use_bytes;
  }
  /// Frees every idle buffer.
  void clear() noexcept {
    idle_.clear();
    stats_.idle_bytes = 0;
  }

 private:
  static std::size_t bytes_of(std::int64_t numel) { return static_cast<std::size_t>(numel) * sizeof(T); }

  std::vector<Tensor<T>> idle_;
  BufferStats stats_;
};

}  // namespace magmadnn::op
