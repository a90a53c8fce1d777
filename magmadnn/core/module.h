/// @file module.h
/// The parts of magmadnn that need a GPU (the CUDA backend with the CUDA
/// convolutions, the NCCL communicator) are shared libraries of their own,
/// loaded at run time only where they can run: one CUDA build serves a
/// machine with a GPU and one without, and on the latter no CUDA library is
/// mapped into the process (ggml's GGML_BACKEND_DL is the model).
///
/// load_module("cuda") opens libmagmadnn_cuda.so.<major> from the folder
/// libmagmadnn_core was loaded from (the build tree or the install prefix),
/// with RTLD_NOW | RTLD_GLOBAL, so the module's static registrars (its
/// convolution algorithms) run at once and register into the base library.
///
/// Guarantees: never throws; on failure returns null and sets `why` to the
/// path and the loader's reason. A module loaded once stays loaded (it is
/// never closed: its registrations live as long as the process).
#pragma once

#include <string>

namespace magmadnn {

/// Whether this machine has an NVIDIA driver (its /proc or /dev entries),
/// without loading any CUDA library.
bool nvidia_driver_present() noexcept;

/// The module's handle, or null with `why` set.
void* load_module(const std::string& name, std::string* why) noexcept;

/// An entry point of a loaded module (an extern "C" function), or null with
/// `why` set.
void* module_symbol(void* module, const char* symbol, std::string* why) noexcept;

/// module_symbol as a function pointer of type F (null with `why` set).
template <typename F>
F module_function(void* module, const char* symbol, std::string* why) noexcept {
  return reinterpret_cast<F>(module_symbol(module, symbol, why));
}

}  // namespace magmadnn
