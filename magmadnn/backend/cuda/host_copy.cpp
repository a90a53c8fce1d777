// The CUDA runtime calls the MPI communicator needs for device buffers
// (comm/mpi/device_copy.h), exported from the CUDA module as C entry points
// so that comm/ reaches them only once the module is loaded (core/module.h)
// and links no CUDA library itself.
#include <cuda_runtime.h>

#include <cstdio>

#include "magmadnn/core/errors.h"

namespace {
void check(cudaError_t rc, const char* call, std::size_t bytes) {
  MAGMADNN_CHECK(rc == cudaSuccess, DeviceError,
                 "MpiCommunicator: " << call << " (" << bytes << " bytes) failed: " << cudaGetErrorString(rc));
}
}  // namespace

extern "C" {

void magmadnn_cuda_device_synchronize() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", 0); }

void magmadnn_cuda_device_to_host(void* host, const void* device, std::size_t bytes) {
  check(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy device to host", bytes);
}

void magmadnn_cuda_host_to_device(void* device, const void* host, std::size_t bytes) {
  check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy host to device", bytes);
}

void* magmadnn_cuda_pinned_allocate(std::size_t bytes) {
  void* p = nullptr;
  check(cudaMallocHost(&p, bytes), "cudaMallocHost", bytes);
  return p;
}

void magmadnn_cuda_pinned_free(void* p) noexcept {
  if (p == nullptr) return;
  const cudaError_t rc = cudaFreeHost(p);
  if (rc != cudaSuccess) std::fprintf(stderr, "magmadnn: cudaFreeHost failed: %s\n", cudaGetErrorString(rc));
}

}  // extern "C"
