#include "magmadnn/core/types.h"

namespace magmadnn {

std::size_t dtype_size(dtype t) noexcept {
  switch (t) {
    case dtype::f32: return 4;
    case dtype::f64: return 8;
    case dtype::f16: return 2;
    case dtype::bf16: return 2;
    case dtype::i32: return 4;
    case dtype::i64: return 8;
  }
  return 0;
}

const char* dtype_name(dtype t) noexcept {
  switch (t) {
    case dtype::f32: return "float32";
    case dtype::f64: return "float64";
    case dtype::f16: return "float16";
    case dtype::bf16: return "bfloat16";
    case dtype::i32: return "int32";
    case dtype::i64: return "int64";
  }
  return "unknown";
}

const char* memory_name(memory_t m) noexcept {
  switch (m) {
    case HOST: return "HOST";
    case DEVICE: return "DEVICE";
    case MANAGED: return "MANAGED";
    case CUDA_MANAGED: return "CUDA_MANAGED";
  }
  return "UNKNOWN";
}

}  // namespace magmadnn
