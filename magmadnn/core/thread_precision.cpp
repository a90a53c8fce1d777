#include "magmadnn/core/thread_precision.h"

namespace magmadnn {
namespace {
thread_local Precision tl_precision = Precision::FP32;
}  // namespace

Precision thread_precision() noexcept { return tl_precision; }
void set_thread_precision(Precision p) noexcept { tl_precision = p; }

}  // namespace magmadnn
