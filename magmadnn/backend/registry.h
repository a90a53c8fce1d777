/// @file registry.h
/// Finds backends at run time. The CPU backend is always present. The CUDA
/// backend is created on first use when the build has CUDA and the machine has
/// at least one GPU; otherwise asking for it throws a DeviceError that says why.
#pragma once

#include <string>

#include "magmadnn/backend/backend.h"

namespace magmadnn {

/// The always-available CPU backend.
Backend& cpu_backend();
/// True when a CUDA backend with at least one device is available.
bool has_cuda_device();
/// Why there is no CUDA backend ("built without CUDA", "no CUDA device: ..."),
/// empty when there is one.
std::string cuda_unavailable_reason();
/// The CUDA backend. Throws DeviceError with cuda_unavailable_reason() if absent.
Backend& cuda_backend();
/// The backend of a device kind (throws as above for CUDA).
Backend& backend_for(DeviceKind kind);

}  // namespace magmadnn
