#include "magmadnn/core/init.h"

#include "magmadnn/backend/registry.h"
#include "magmadnn/compute/operation.h"

namespace magmadnn {

void magmadnn_init() {
  cpu_backend();
  if (has_cuda_device()) cuda_backend().synchronize(0);
}

void magmadnn_finalize() {
  // Graph nodes that v1 code turned into raw pointers and never deleted.
  op::release_pinned_nodes();
  if (has_cuda_device()) {
    Backend& b = cuda_backend();
    for (int d = 0; d < b.device_count(); ++d) b.synchronize(d);
    b.release_cached_memory();
  }
  cpu_backend().release_cached_memory();
}

}  // namespace magmadnn
