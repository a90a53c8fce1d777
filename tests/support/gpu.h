/// @file gpu.h
/// GPU fixtures: MAGMADNN_REQUIRE_GPU() skips the current test with a message
/// saying why when no CUDA device is usable.
#pragma once

#include <gtest/gtest.h>

#include "magmadnn/backend/registry.h"

#define MAGMADNN_REQUIRE_GPU()                                                          \
  do {                                                                                  \
    if (!::magmadnn::has_cuda_device())                                                 \
      GTEST_SKIP() << "no GPU: " << ::magmadnn::cuda_unavailable_reason();              \
  } while (0)

namespace magmadnn::test {
/// Memory types usable on this machine (HOST, MANAGED always; DEVICE and
/// CUDA_MANAGED with a GPU).
std::vector<memory_t> available_memory_types();
}  // namespace magmadnn::test
