#include "lead_process.h"

#include "magmadnn/comm/communicator_factory.h"

namespace magmadnn::cli {

bool lead_process() {
  if (!distributed::launched_by_mpi()) return true;
  return distributed::make_communicator("auto")->rank() == 0;
}

}  // namespace magmadnn::cli
