#include "support/gpu.h"

namespace magmadnn::test {
std::vector<memory_t> available_memory_types() {
  std::vector<memory_t> m{HOST, MANAGED};
  if (has_cuda_device()) {
    m.push_back(DEVICE);
    m.push_back(CUDA_MANAGED);
  }
  return m;
}
}  // namespace magmadnn::test
