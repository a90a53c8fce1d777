#include "magmadnn/memory/memory_manager.h"

#include <atomic>
#include <cstdint>
#include <cstring>

#include "magmadnn/backend/registry.h"
#include "magmadnn/core/errors.h"

namespace magmadnn {

namespace {
// Stamps are unique across all arrays, so a stamp identifies one state of one
// array even after the array is freed and its address reused.
std::atomic<std::uint64_t> g_write_stamp{0};
}  // namespace

template <typename T>
void MemoryManager<T>::touch() noexcept {
  stamp_ = g_write_stamp.fetch_add(1, std::memory_order_relaxed) + 1;
}

namespace {
// Where a range of one side of a copy lives.
enum class Loc { Host, Device };

CopyKind kind_of(Loc src, Loc dst) {
  if (src == Loc::Host) return dst == Loc::Host ? CopyKind::HostToHost : CopyKind::HostToDevice;
  return dst == Loc::Host ? CopyKind::DeviceToHost : CopyKind::DeviceToDevice;
}
}  // namespace

template <typename T>
MemoryManager<T>::MemoryManager(std::size_t size, memory_t mem_type, device_t device_id)
    : size_(size), mem_type_(mem_type), device_id_(device_id) {
  touch();
  MAGMADNN_CHECK(mem_type >= HOST && mem_type <= CUDA_MANAGED, ValueError,
                 "unknown memory type " << static_cast<int>(mem_type));
  const std::size_t bytes = size * sizeof(T);
  switch (mem_type) {
    case HOST:
      host_ = static_cast<T*>(cpu_backend().allocate(bytes, 0));
      break;
    case DEVICE:
      MAGMADNN_CHECK(has_cuda_device(), DeviceError,
                     "cannot allocate DEVICE memory: " << cuda_unavailable_reason());
      on_device_ = true;
      ensure_device_allocated();
      break;
    case MANAGED:
      host_ = static_cast<T*>(cpu_backend().allocate(bytes, 0));
      on_device_ = has_cuda_device();
      if (on_device_) {
        MAGMADNN_CHECK(device_id >= 0 && device_id < cuda_backend().device_count(), DeviceError,
                       "MANAGED memory on device " << device_id << ", but there are "
                                                   << cuda_backend().device_count() << " CUDA devices");
      }
      break;
    case CUDA_MANAGED:
      MAGMADNN_CHECK(has_cuda_device(), DeviceError,
                     "cannot allocate CUDA_MANAGED memory: " << cuda_unavailable_reason());
      on_device_ = true;
      host_ = device_ = static_cast<T*>(cuda_backend().allocate_unified(bytes, device_id));
      break;
  }
}

template <typename T>
MemoryManager<T>::MemoryManager(T* host, std::size_t size, std::shared_ptr<void> keep_alive)
    : size_(size), mem_type_(HOST), device_id_(0), host_(host), borrowed_(std::move(keep_alive)) {
  touch();
  MAGMADNN_CHECK(host != nullptr || size == 0, ValueError, "borrowed host memory: null pointer for " << size
                                                                   << " elements");
  MAGMADNN_CHECK(reinterpret_cast<std::uintptr_t>(host) % alignof(T) == 0, ValueError,
                 "borrowed host memory at " << static_cast<const void*>(host) << " is not aligned to "
                                            << alignof(T) << " bytes");
  if (!borrowed_) borrowed_ = std::make_shared<int>(0);  // borrowed all the same: never freed here
}

template <typename T>
MemoryManager<T>::~MemoryManager() {
  if (borrowed_) return;  // host_ is the owner's; releasing borrowed_ hands it back
  const std::size_t bytes = size_ * sizeof(T);
  if (mem_type_ == CUDA_MANAGED) {
    if (device_) cuda_backend().deallocate_unified(device_);
    return;
  }
  if (device_pending_) cuda_backend().synchronize(device_id_);  // an async copy may still read host_
  if (host_) cpu_backend().deallocate(host_, bytes, 0);
  if (device_) cuda_backend().deallocate(device_, bytes, device_id_);
}

template <typename T>
Backend& MemoryManager<T>::device_backend() const {
  return cuda_backend();
}

template <typename T>
void MemoryManager<T>::ensure_device_allocated() const {
  if (device_ || size_ == 0) return;
  Backend& b = device_backend();
  MAGMADNN_CHECK(device_id_ >= 0 && device_id_ < b.device_count(), DeviceError,
                 "device " << device_id_ << " requested, but there are " << b.device_count() << " CUDA devices");
  device_ = static_cast<T*>(b.allocate(size_ * sizeof(T), device_id_));
}

template <typename T>
void MemoryManager<T>::make_host_valid() const {
  if (mem_type_ != MANAGED || host_valid_) return;
  if (size_ > 0) device_backend().copy(host_, device_, size_ * sizeof(T), CopyKind::DeviceToHost, device_id_);
  host_valid_ = true;
  device_pending_ = false;
}

template <typename T>
void MemoryManager<T>::make_device_valid() const {
  if (mem_type_ != MANAGED) return;
  MAGMADNN_CHECK(on_device_, DeviceError, "MANAGED memory has no device side: " << cuda_unavailable_reason());
  ensure_device_allocated();
  if (device_valid_) return;
  if (size_ > 0) device_backend().copy(device_, host_, size_ * sizeof(T), CopyKind::HostToDevice, device_id_);
  device_valid_ = true;
  device_pending_ = false;
}

// -- pointers -------------------------------------------------------------------

template <typename T>
const T* MemoryManager<T>::host_data() const {
  switch (mem_type_) {
    case HOST: return host_;
    case DEVICE:
      MAGMADNN_THROW(DeviceError, "DEVICE memory has no host pointer; copy it to HOST or MANAGED memory first");
    case MANAGED: make_host_valid(); return host_;
    case CUDA_MANAGED: device_backend().synchronize(device_id_); return host_;
  }
  return nullptr;
}

template <typename T>
T* MemoryManager<T>::mutable_host_data() {
  touch();
  const T* p = host_data();
  if (mem_type_ == MANAGED) {
    if (device_pending_) {  // an async host-to-device copy may still be reading the host side
      device_backend().synchronize(device_id_);
      device_pending_ = false;
    }
    device_valid_ = false;
  }
  return const_cast<T*>(p);
}

template <typename T>
const T* MemoryManager<T>::device_data() const {
  switch (mem_type_) {
    case HOST: MAGMADNN_THROW(DeviceError, "HOST memory has no device pointer; use DEVICE or MANAGED memory");
    case DEVICE: return device_;
    case MANAGED: make_device_valid(); return device_;
    case CUDA_MANAGED: return device_;
  }
  return nullptr;
}

template <typename T>
T* MemoryManager<T>::mutable_device_data() {
  touch();
  const T* p = device_data();
  if (mem_type_ == MANAGED) host_valid_ = false;
  return const_cast<T*>(p);
}

template <typename T>
const T* MemoryManager<T>::data() const {
  return on_device_ ? device_data() : host_data();
}

template <typename T>
T* MemoryManager<T>::mutable_data() {
  return on_device_ ? mutable_device_data() : mutable_host_data();
}

template <typename T>
T* MemoryManager<T>::get_cuda_managed_ptr() {
  touch();
  MAGMADNN_CHECK(mem_type_ == CUDA_MANAGED, DeviceError,
                 "get_cuda_managed_ptr() on " << memory_name(mem_type_) << " memory (needs CUDA_MANAGED)");
  return device_;
}

// -- copies ---------------------------------------------------------------------

template <typename T>
void MemoryManager<T>::copy_from(const MemoryManager& src) {
  MAGMADNN_CHECK(src.size_ <= size_, IndexError,
                 "copy_from: source has " << src.size_ << " elements, destination only " << size_);
  copy_from(src, 0, 0, src.size_);
}

template <typename T>
void MemoryManager<T>::copy_from(const MemoryManager& src, std::size_t src_offset, std::size_t dst_offset,
                                 std::size_t count) {
  touch();
  MAGMADNN_CHECK(src_offset <= src.size_ && count <= src.size_ - src_offset, IndexError,
                 "copy_from: source range [" << src_offset << ", " << src_offset + count << ") is outside its "
                                             << src.size_ << " elements");
  MAGMADNN_CHECK(dst_offset <= size_ && count <= size_ - dst_offset, IndexError,
                 "copy_from: destination range [" << dst_offset << ", " << dst_offset + count
                                                  << ") is outside its " << size_ << " elements");
  if (count == 0) return;
  if (&src == this && src_offset == dst_offset) return;

  // Read from the side of `src` that is current, preferring the device.
  Loc sloc;
  const T* sp;
  switch (src.mem_type_) {
    case HOST: sloc = Loc::Host; sp = src.host_; break;
    case MANAGED:
      if (src.on_device_ && src.device_valid_ && src.device_) {
        sloc = Loc::Device; sp = src.device_;
      } else {
        src.make_host_valid();
        sloc = Loc::Host; sp = src.host_;
      }
      break;
    default: sloc = Loc::Device; sp = src.device_; break;  // DEVICE, CUDA_MANAGED
  }

  // Write into the side of `this` that matches, keeping MANAGED coherent.
  Loc dloc;
  T* dp;
  switch (mem_type_) {
    case HOST: dloc = Loc::Host; dp = host_; break;
    case MANAGED:
      if (sloc == Loc::Device && on_device_) {
        if (count != size_) make_device_valid();  // a partial write needs the rest current
        ensure_device_allocated();
        dloc = Loc::Device; dp = device_;
        device_valid_ = true; host_valid_ = false;
      } else {
        if (count != size_) make_host_valid();
        dloc = Loc::Host; dp = host_;
        host_valid_ = true;
        if (on_device_) device_valid_ = false;
      }
      break;
    default: dloc = Loc::Device; dp = device_; break;
  }

  const std::size_t bytes = count * sizeof(T);
  const CopyKind kind = kind_of(sloc, dloc);
  if (kind == CopyKind::HostToHost) {
    std::memmove(dp + dst_offset, sp + src_offset, bytes);
  } else {
    device_t dev = dloc == Loc::Device ? device_id_ : src.device_id_;
    device_backend().copy(dp + dst_offset, sp + src_offset, bytes, kind, dev);
  }
}

template <typename T>
void MemoryManager<T>::copy_from_host(const T* src, std::size_t count, std::size_t dst_offset) {
  touch();
  MAGMADNN_CHECK(dst_offset <= size_ && count <= size_ - dst_offset, IndexError,
                 "copy_from_host: range [" << dst_offset << ", " << dst_offset + count << ") is outside "
                                           << size_ << " elements");
  if (count == 0) return;
  switch (mem_type_) {
    case HOST: std::memcpy(host_ + dst_offset, src, count * sizeof(T)); break;
    case MANAGED: {
      if (count != size_) make_host_valid();
      std::memcpy(host_ + dst_offset, src, count * sizeof(T));
      host_valid_ = true;
      if (on_device_) device_valid_ = false;
      break;
    }
    default:
      device_backend().copy(device_ + dst_offset, src, count * sizeof(T), CopyKind::HostToDevice, device_id_);
  }
}

template <typename T>
void MemoryManager<T>::copy_to_host(T* dst, std::size_t count, std::size_t src_offset) const {
  MAGMADNN_CHECK(src_offset <= size_ && count <= size_ - src_offset, IndexError,
                 "copy_to_host: range [" << src_offset << ", " << src_offset + count << ") is outside " << size_
                                         << " elements");
  if (count == 0) return;
  if (mem_type_ == HOST || mem_type_ == MANAGED) {
    std::memcpy(dst, host_data() + src_offset, count * sizeof(T));
  } else {
    device_backend().copy(dst, device_ + src_offset, count * sizeof(T), CopyKind::DeviceToHost, device_id_);
  }
}

// -- elements -------------------------------------------------------------------

template <typename T>
T MemoryManager<T>::get(std::size_t i) const {
  MAGMADNN_CHECK(i < size_, IndexError, "index " << i << " is out of range for " << size_ << " elements");
  if (mem_type_ == HOST) return host_[i];
  if (mem_type_ == MANAGED && host_valid_) return host_[i];
  T v;
  copy_to_host(&v, 1, i);
  return v;
}

template <typename T>
void MemoryManager<T>::set(std::size_t i, T value) {
  touch();
  MAGMADNN_CHECK(i < size_, IndexError, "index " << i << " is out of range for " << size_ << " elements");
  if (mem_type_ == HOST) {
    host_[i] = value;
    return;
  }
  copy_from_host(&value, 1, i);
}

// -- synchronisation ----------------------------------------------------------

template <typename T>
void MemoryManager<T>::sync(bool device_to_host) {
  if (mem_type_ == MANAGED) {
    if (device_to_host) make_host_valid();
    else if (on_device_) make_device_valid();
    return;
  }
  if (mem_type_ != HOST) device_backend().synchronize(device_id_);
}

template <typename T>
void MemoryManager<T>::prefetch(bool to_host) {
  if (size_ == 0) return;
  const std::size_t bytes = size_ * sizeof(T);
  if (mem_type_ == CUDA_MANAGED) {
    device_backend().prefetch_unified(device_, bytes, device_id_, to_host);
  } else if (mem_type_ == MANAGED && on_device_) {
    // The copy is queued on the device stream; every later access of the
    // destination goes through that stream or synchronises, so marking it
    // valid now is safe.
    if (to_host && !host_valid_) {
      device_backend().copy_async(host_, device_, bytes, CopyKind::DeviceToHost, device_id_);
      device_backend().synchronize(device_id_);  // host reads bypass the stream
      host_valid_ = true;
    } else if (!to_host && !device_valid_) {
      ensure_device_allocated();
      device_backend().copy_async(device_, host_, bytes, CopyKind::HostToDevice, device_id_);
      device_valid_ = true;
      device_pending_ = true;
    }
  }
}

template class MemoryManager<float>;
template class MemoryManager<double>;
template class MemoryManager<half>;
template class MemoryManager<bfloat16>;
template class MemoryManager<std::int32_t>;
template class MemoryManager<std::int64_t>;

}  // namespace magmadnn
