// docs/hybrid.md: dMath's distributed matrices, on however many ranks
// run it (one here: every layout is the whole matrix on rank 0).
#include <iostream>
#include <vector>

#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/dmath/dist_matrix.h"
#include "magmadnn/dmath/gemm.h"
// @head@

int main() {
  std::vector<float> global(4096 * 1024);
  for (std::size_t i = 0; i < global.size(); ++i) global[i] = static_cast<float>(i % 7) - 3.0f;
// @snippet@
  std::cout << "whole " << whole.size() << ", plan " << static_cast<int>(plan.algorithm) << "\n";
  return whole == global ? 0 : 1;
}
