// docs/hybrid.md, "Pipelines": a pipeline built and stepped in code, on
// whatever make_communicator("auto") gives (one local rank here: a pipeline
// of one stage).
#include <iostream>

#include <magmadnn.h>
#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/parallel/pipeline/pipeline.h"
using namespace magmadnn;
// @head@

int main() {
  Tensor<float> x_batch({32, 784}, {UNIFORM, {-1.0f, 1.0f}}, HOST);
  Tensor<float> y_batch({32, 10}, {ZERO}, HOST);
  for (std::int64_t i = 0; i < 32; ++i) y_batch.set({i, i % 10}, 1.0f);
  std::shared_ptr<distributed::Communicator> comm = distributed::make_communicator("auto");
// @snippet@
  std::cout << "loss " << loss << ", stage " << pipe.stage() << " of " << pipe.stages() << "\n";
  return loss > 0 && pipe.last_step().peak_in_flight >= 1 ? 0 : 1;
}
