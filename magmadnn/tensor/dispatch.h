/// @file dispatch.h
/// Picks the backend an operation on tensors runs on: the one where the data
/// lives. Mixing host and device operands is an error that names both.
#pragma once

#include "magmadnn/backend/registry.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn {

/// The backend of `t`, with its device made current.
template <typename T>
Backend& backend_of(const Tensor<T>& t) {
  if (!t.on_device()) return cpu_backend();
  Backend& b = cuda_backend();
  b.set_device(t.get_device_id());
  return b;
}

/// Checks that all operands live on the same side (host, or the same GPU) and
/// returns the backend they share. `op` names the operation in the error.
template <typename T, typename... Rest>
Backend& common_backend(const char* op, const Tensor<T>& first, const Rest&... rest) {
  const bool dev = first.on_device();
  const device_t id = first.get_device_id();
  [[maybe_unused]] auto same = [&](const auto& t) {
    MAGMADNN_CHECK(t.on_device() == dev && (!dev || t.get_device_id() == id), DeviceError,
                   op << ": operands live on different devices (" << (dev ? "GPU " : "host")
                      << (dev ? std::to_string(id) : std::string()) << " and "
                      << (t.on_device() ? "GPU " + std::to_string(t.get_device_id()) : std::string("host"))
                      << "); copy one with Tensor::to()");
  };
  (same(rest), ...);
  return backend_of(first);
}

}  // namespace magmadnn
