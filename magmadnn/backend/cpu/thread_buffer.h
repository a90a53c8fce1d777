/// @file thread_buffer.h
/// thread_buffer<Tag>(bytes): a scratch buffer of this thread's, for CPU
/// kernels that run on OpenMP threads and must not allocate on every call
/// (oneDNN's user scratchpad, the tiles of gemm_update).
///
/// Guarantees: 64-byte aligned; at least `bytes` long; grown (contents not
/// kept) when a larger one is asked for, otherwise the same memory as the
/// last call with that Tag on this thread; freed when the thread ends. Each
/// Tag has its own buffer, so two users in one call chain (a gemm_update
/// tile and the scratchpad of the GEMM that fills it) never share one.
/// Throws Error naming `what` when the host is out of memory.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

#include "magmadnn/core/errors.h"

namespace magmadnn::cpu {

template <typename Tag>
void* thread_buffer(std::size_t bytes, const char* what) {
  struct Free {
    void operator()(void* p) const noexcept { std::free(p); }
  };
  thread_local std::unique_ptr<void, Free> buf;
  thread_local std::size_t cap = 0;
  if (bytes > cap) {
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    buf.reset(std::aligned_alloc(64, rounded));
    MAGMADNN_CHECK(buf != nullptr, Error, what << ": out of host memory for a " << bytes << "-byte buffer");
    cap = rounded;
  }
  return buf.get();
}

}  // namespace magmadnn::cpu
