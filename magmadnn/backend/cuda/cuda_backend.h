/// @file cuda_backend.h
/// Entry point of the CUDA backend; plain C++ so that the registry can include
/// it without CUDA headers.
#pragma once

#include <memory>
#include <string>

#include "magmadnn/backend/backend.h"

namespace magmadnn {

/// Creates the CUDA backend, or returns null and sets `why_not` when the
/// machine has no usable GPU (driver missing, no device).
std::unique_ptr<Backend> make_cuda_backend(std::string* why_not);

}  // namespace magmadnn
