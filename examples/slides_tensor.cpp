// The MemoryManager and Tensor code of the MagmaDNN slides, as written there.
// The slides allocate the tensor on DEVICE; on a machine without a GPU this
// program says so and repeats the demo on MANAGED memory.
#include <iostream>

#include "magmadnn.h"

using namespace magmadnn;

static void tensor_demo(memory_t where) {
  Tensor<float> x({32, 28, 28}, {UNIFORM, {-1.0f, 1.0f}}, where);
  std::cout << x.get({1, 3, 0});
  x.set({1, 3, 0}, 8.0f);
  std::cout << " -> " << x.get({1, 3, 0}) << " (" << memory_name(where) << ")\n";
}

int main() {
  size_t n_vals = 20;

  // HOST, DEVICE, MANAGED, CUDA_MANAGED
  memory_t mem_type = MANAGED;
  device_t device_id = 0;
  MemoryManager<float> mm(n_vals, mem_type, device_id);
  std::cout << "MemoryManager: " << mm.get_size() << " floats of " << memory_name(mm.get_memory_type())
            << " memory" << (mm.on_device() ? " (on the GPU)" : " (on the host: no GPU)") << "\n";

  try {
    tensor_demo(DEVICE);
  } catch (const DeviceError& e) {
    std::cout << "DEVICE tensor unavailable: " << e.what() << "\n";
    tensor_demo(MANAGED);
  }
  return 0;
}
