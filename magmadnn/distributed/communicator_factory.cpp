// TEMPORARY stub (dist-run branch), local only; the mpi-comm branch's file replaces it.
#include "magmadnn/distributed/communicator_factory.h"

#include <cstdlib>

#include "magmadnn/distributed/local_communicator.h"

namespace magmadnn::distributed {
std::unique_ptr<Communicator> make_communicator(const std::string& kind) {
  MAGMADNN_CHECK(kind == "auto" || kind == "local", NotSupportedError, "stub: no " << kind);
  return std::make_unique<LocalCommunicator>();
}
bool launched_by_mpi() noexcept { return false; }
void abort_job(int code) { std::exit(code); }
}  // namespace magmadnn::distributed
