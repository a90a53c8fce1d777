// docs/distributed.md: a collective whose failure ends the job. One process
// here (make_communicator("auto") gives the local communicator), so the
// allreduce succeeds and the handler is compiled, not reached.
#include <cstdio>
#include <vector>

#include <magmadnn.h>
#include "magmadnn/comm/communicator_factory.h"
using namespace magmadnn::distributed;
// @head@

int main() {
  auto comm = make_communicator("auto");
  std::vector<float> g(1024, 2.0f);
  Buffer grads = host_buffer(g.data(), g.size());
// @snippet@
  return g[0] == 2.0f ? 0 : 1;  // the average of one rank's gradients is itself
}
