/// @file cpu_backend.h
/// The CPU backend: 64-byte aligned host memory, oneDNN matrix products,
/// OpenMP-threaded elementwise and reduction kernels.
#pragma once

#include <memory>

#include "magmadnn/backend/backend.h"

namespace magmadnn {

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace magmadnn
