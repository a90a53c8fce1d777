#include "magmadnn/parallel/model_parallel/root_rng.h"

#include <cstdint>

#include "magmadnn/core/random.h"

namespace magmadnn::distributed::mp {

void adopt_root_rng(Communicator& group) {
  if (group.size() == 1) return;
  const RngState s = get_rng_state();
  // As int64: the communicator's integer type; C++20 makes the round trip exact.
  std::int64_t v[2] = {static_cast<std::int64_t>(s.seed), static_cast<std::int64_t>(s.next_stream)};
  group.broadcast(host_buffer(v, 2), 0);  // not a matrix block: the generator state
  set_rng_state({static_cast<std::uint64_t>(v[0]), static_cast<std::uint64_t>(v[1])});
}

}  // namespace magmadnn::distributed::mp
