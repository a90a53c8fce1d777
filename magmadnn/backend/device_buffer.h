/// @file device_buffer.h
/// DeviceBuffer: memory of one backend on one device, held for one scope.
///
/// For scratch memory that lives as long as a call: a convolution's
/// workspace, the random inputs the convolution chooser times algorithms on.
/// The memory comes from Backend::allocate, i.e. the backend's caching pool,
/// so a size seen before costs no system call.
///
/// Requires: `backend` outlives the buffer (backends are never destroyed).
/// Guarantees: data() is null for 0 bytes, else `bytes` bytes aligned as
/// Backend::allocate aligns them; the destructor gives them back to the same
/// backend and device. Throws DeviceError when the device is out of memory.
/// Neither copyable nor movable: one owner, one scope.
#pragma once

#include <cstddef>

#include "magmadnn/backend/backend.h"

namespace magmadnn {

class DeviceBuffer {
 public:
  DeviceBuffer(Backend& backend, std::size_t bytes, device_t device = 0)
      : backend_(backend), bytes_(bytes), device_(device), data_(bytes ? backend.allocate(bytes, device) : nullptr) {}
  ~DeviceBuffer() {
    if (data_) backend_.deallocate(data_, bytes_, device_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const noexcept { return data_; }
  /// The memory as an array of T.
  template <typename T>
  T* as() const noexcept {
    return static_cast<T*>(data_);
  }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  Backend& backend_;
  std::size_t bytes_;
  device_t device_;
  void* data_;
};

}  // namespace magmadnn
