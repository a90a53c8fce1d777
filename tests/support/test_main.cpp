// Shared main: prints the backends present, so a log says which tests could run.
#include <gtest/gtest.h>

#include <iostream>

#include "magmadnn/backend/registry.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!magmadnn::has_cuda_device()) {
    std::cout << "[magmadnn] GPU tests will skip: " << magmadnn::cuda_unavailable_reason() << "\n";
  }
  return RUN_ALL_TESTS();
}
