#include "magmadnn/backend/registry.h"

#include <memory>
#include <mutex>

#include "magmadnn/backend/cpu/cpu_backend.h"
#include "magmadnn/core/config.h"
#include "magmadnn/core/errors.h"
#if MAGMADNN_HAVE_CUDA
#include "magmadnn/backend/cuda/cuda_backend.h"
#endif

namespace magmadnn {
namespace {

struct CudaSlot {
  std::once_flag once;
  std::unique_ptr<Backend> backend;
  std::string why_not;
};

CudaSlot& cuda_slot() {
  // Leaked on purpose: device memory may be returned to the backend by static
  // objects destroyed after this function's statics would be.
  static CudaSlot* slot = new CudaSlot();
  std::call_once(slot->once, [] {
#if MAGMADNN_HAVE_CUDA
    slot->backend = make_cuda_backend(&slot->why_not);
#else
    slot->why_not = "magmadnn was built without CUDA (configure with -DMAGMADNN_CUDA=ON)";
#endif
  });
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
