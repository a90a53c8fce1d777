// device_copy.h: in a CUDA build, the CUDA module's C entry points
// (backend/cuda/host_copy.cpp), found once the CUDA backend has loaded the
// module (core/module.h), so this library links no CUDA library. Without a
// GPU no device buffer exists, and a call says why there is none; in a
// build without CUDA, MpiCommunicator::supports(device) is false and these
// are never reached through it.
#include "magmadnn/comm/mpi/device_copy.h"

#include "magmadnn/backend/registry.h"
#include "magmadnn/core/config.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/core/module.h"

namespace magmadnn::distributed::mpi_detail {

namespace {

struct CudaCopies {
  void (*synchronize)() = nullptr;
  void (*to_host)(void*, const void*, std::size_t) = nullptr;
  void (*to_device)(void*, const void*, std::size_t) = nullptr;
  void* (*pinned_allocate)(std::size_t) = nullptr;
  void (*pinned_free)(void*) = nullptr;
};

const CudaCopies& cuda(const char* what) {
  static const CudaCopies copies = [] {
    CudaCopies c;
    std::string why;
    if (!has_cuda_device()) return c;
    void* m = load_module("cuda", &why);  // loaded already by the backend: the same handle
    c.synchronize = module_function<decltype(c.synchronize)>(m, "magmadnn_cuda_device_synchronize", &why);
    c.to_host = module_function<decltype(c.to_host)>(m, "magmadnn_cuda_device_to_host", &why);
    c.to_device = module_function<decltype(c.to_device)>(m, "magmadnn_cuda_host_to_device", &why);
    c.pinned_allocate = module_function<decltype(c.pinned_allocate)>(m, "magmadnn_cuda_pinned_allocate", &why);
    c.pinned_free = module_function<decltype(c.pinned_free)>(m, "magmadnn_cuda_pinned_free", &why);
    return c;
  }();
  MAGMADNN_CHECK(copies.pinned_free != nullptr, DeviceError,
                 "MpiCommunicator: " << what << " needs a GPU: " << cuda_unavailable_reason());
  return copies;
}

}  // namespace

bool device_build() noexcept {
#if defined(MAGMADNN_HAVE_CUDA)
  return true;
#else
  return false;
#endif
}

void device_synchronize() { cuda("device_synchronize").synchronize(); }
void device_to_host(void* host, const void* device, std::size_t bytes) {
  cuda("a device-to-host copy").to_host(host, device, bytes);
}
void host_to_device(void* device, const void* host, std::size_t bytes) {
  cuda("a host-to-device copy").to_device(device, host, bytes);
}
void* pinned_allocate(std::size_t bytes) { return cuda("pinned host memory").pinned_allocate(bytes); }
void pinned_free(void* p) noexcept {
  if (p != nullptr && has_cuda_device()) cuda("").pinned_free(p);
}

}  // namespace magmadnn::distributed::mpi_detail
