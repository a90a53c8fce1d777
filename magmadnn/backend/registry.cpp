#include "magmadnn/backend/registry.h"

#include <memory>
#include <mutex>

#include "magmadnn/backend/cpu/cpu_backend.h"
#include "magmadnn/core/config.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/core/module.h"

namespace magmadnn {
namespace {

struct CudaSlot {
  std::once_flag once;
  std::unique_ptr<Backend> backend;
  std::string why_not;
};

// The CUDA backend is a module (core/module.h), loaded only where an NVIDIA
// driver is: without one, no CUDA library enters the process.
std::unique_ptr<Backend> load_cuda_backend(std::string* why_not) {
#if MAGMADNN_HAVE_CUDA
  if (!nvidia_driver_present()) {
    *why_not = "no NVIDIA driver on this machine (no /proc/driver/nvidia, no /dev/nvidiactl); the CUDA module was "
               "not loaded";
    return nullptr;
  }
  void* module = load_module("cuda", why_not);
  auto make = module_function<Backend* (*)(std::string*)>(module, "magmadnn_cuda_make_backend", why_not);
  return make ? std::unique_ptr<Backend>(make(why_not)) : nullptr;
#else
  *why_not = "magmadnn was built without CUDA (configure with -DMAGMADNN_CUDA=ON)";
  return nullptr;
#endif
}

CudaSlot& cuda_slot() {
  // Leaked on purpose: device memory may be returned to the backend by static
  // objects destroyed after this function's statics would be.
  static CudaSlot* slot = new CudaSlot();
  std::call_once(slot->once, [] { slot->backend = load_cuda_backend(&slot->why_not); });
  return *slot;
}

}  // namespace

Backend& cpu_backend() {
  static Backend* b = make_cpu_backend().release();  // lives as long as the process (see cuda_slot)
  return *b;
}

bool has_cuda_device() { return cuda_slot().backend != nullptr; }

std::string cuda_unavailable_reason() { return cuda_slot().backend ? std::string() : cuda_slot().why_not; }

Backend& cuda_backend() {
  CudaSlot& s = cuda_slot();
  MAGMADNN_CHECK(s.backend != nullptr, DeviceError, "no CUDA backend: " << s.why_not);
  return *s.backend;
}

Backend& backend_for(DeviceKind kind) { return kind == DeviceKind::CPU ? cpu_backend() : cuda_backend(); }

}  // namespace magmadnn
