#include "magmadnn/dmath/plan_cache.h"

#include <atomic>
#include <mutex>
#include <vector>

#include "magmadnn/dmath/plan_cache_detail.h"

namespace magmadnn::distributed::dmath {
namespace {

std::atomic<std::uint64_t> g_made{0}, g_reused{0};

struct Resets {
  std::mutex mutex;
  std::vector<void (*)() noexcept> clears;
};
Resets& resets() {
  static Resets r;
  return r;
}

}  // namespace

namespace detail {

void count_plan(bool reused) noexcept { (reused ? g_reused : g_made).fetch_add(1, std::memory_order_relaxed); }

void on_reset(void (*clear)() noexcept) {
  std::lock_guard<std::mutex> lock(resets().mutex);
  resets().clears.push_back(clear);
}

}  // namespace detail

PlanStats plan_stats() noexcept { return {g_made.load(), g_reused.load()}; }

void reset_plan_cache() noexcept {
  {
    std::lock_guard<std::mutex> lock(resets().mutex);
    for (auto clear : resets().clears) clear();
  }
  g_made = 0;
  g_reused = 0;
}

}  // namespace magmadnn::distributed::dmath
