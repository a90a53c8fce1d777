// device_copy.h in a build without CUDA: MpiCommunicator::supports(device)
// is false there, so these are never reached through it.
#include "magmadnn/core/config.h"

#if !defined(MAGMADNN_HAVE_CUDA)

#include "magmadnn/core/errors.h"
#include "magmadnn/comm/mpi/device_copy.h"

namespace magmadnn::distributed::mpi_detail {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  MAGMADNN_THROW(NotSupportedError, "MpiCommunicator: " << what << " needs a CUDA build of magmadnn");
}
}  // namespace

bool device_build() noexcept { return false; }
void device_synchronize() { no_cuda("device_synchronize"); }
void device_to_host(void*, const void*, std::size_t) { no_cuda("a device-to-host copy"); }
void host_to_device(void*, const void*, std::size_t) { no_cuda("a host-to-device copy"); }
void* pinned_allocate(std::size_t) { no_cuda("pinned host memory"); }
void pinned_free(void*) noexcept {}

}  // namespace magmadnn::distributed::mpi_detail

#endif
