/// @file device_copy.h
/// The few CUDA runtime calls MpiCommunicator needs for device buffers,
/// behind a CUDA-free interface: the CUDA module's entry points
/// (backend/cuda/host_copy.cpp), reached through core/module.h once the
/// CUDA backend has loaded it, so no CUDA symbol reaches this library.
/// Without a GPU every call but pinned_free throws DeviceError saying why.
#pragma once

#include <cstddef>

namespace magmadnn::distributed::mpi_detail {

/// Whether this build can reach device memory (MAGMADNN_HAVE_CUDA).
bool device_build() noexcept;
/// Waits for the work queued on the current device, so that a device buffer
/// MPI is about to read holds its final values.
void device_synchronize();
void device_to_host(void* host, const void* device, std::size_t bytes);
void host_to_device(void* device, const void* host, std::size_t bytes);
/// Page-locked host memory (cudaMallocHost), for fast staging copies.
void* pinned_allocate(std::size_t bytes);
void pinned_free(void* p) noexcept;

}  // namespace magmadnn::distributed::mpi_detail
