#include "magmadnn/core/random.h"

#include <atomic>

namespace magmadnn {
namespace {
std::atomic<std::uint64_t> g_seed{kDefaultSeed};
std::atomic<std::uint64_t> g_stream{0};
}  // namespace

void set_seed(std::uint64_t seed) {
  g_seed.store(seed);
  g_stream.store(0);
}
std::uint64_t get_seed() { return g_seed.load(); }
std::uint64_t next_random_stream() { return g_stream.fetch_add(1); }
RngState get_rng_state() { return {g_seed.load(), g_stream.load()}; }
void set_rng_state(const RngState& s) {
  g_seed.store(s.seed);
  g_stream.store(s.next_stream);
}

}  // namespace magmadnn
