#include "magmadnn/comm/communicator.h"

namespace magmadnn::distributed {

const char* reduce_op_name(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

void wait_all(std::vector<RequestPtr>& requests) {
  for (RequestPtr& r : requests) {
    if (r) r->wait();
  }
}

}  // namespace magmadnn::distributed
