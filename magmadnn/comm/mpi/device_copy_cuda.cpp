// device_copy.h with the CUDA runtime (compiled in CUDA builds only).
#include <cuda_runtime.h>

#include <cstdio>

#include "magmadnn/core/errors.h"
#include "magmadnn/comm/mpi/device_copy.h"

namespace magmadnn::distributed::mpi_detail {

namespace {
void check(cudaError_t rc, const char* call, std::size_t bytes) {
  MAGMADNN_CHECK(rc == cudaSuccess, DeviceError,
                 "MpiCommunicator: " << call << " (" << bytes << " bytes) failed: " << cudaGetErrorString(rc));
}
}  // namespace

bool device_build() noexcept { return true; }

void device_synchronize() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", 0); }

void device_to_host(void* host, const void* device, std::size_t bytes) {
  check(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy device to host", bytes);
}

void host_to_device(void* device, const void* host, std::size_t bytes) {
  check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy host to device", bytes);
}

void* pinned_allocate(std::size_t bytes) {
  void* p = nullptr;
  check(cudaMallocHost(&p, bytes), "cudaMallocHost", bytes);
  return p;
}

void pinned_free(void* p) noexcept {
  if (p == nullptr) return;
  const cudaError_t rc = cudaFreeHost(p);
  if (rc != cudaSuccess) std::fprintf(stderr, "magmadnn: cudaFreeHost failed: %s\n", cudaGetErrorString(rc));
}

}  // namespace magmadnn::distributed::mpi_detail
