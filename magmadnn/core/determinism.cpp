#include "magmadnn/core/determinism.h"

#include <atomic>

namespace magmadnn {
namespace {
std::atomic<bool> g_deterministic{false};
}  // namespace

bool deterministic_algorithms() noexcept { return g_deterministic.load(std::memory_order_relaxed); }
void set_deterministic_algorithms(bool on) noexcept { g_deterministic.store(on, std::memory_order_relaxed); }

}  // namespace magmadnn
