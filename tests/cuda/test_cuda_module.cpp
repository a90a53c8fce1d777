// The CUDA backend and the NCCL communicator are modules loaded only where
// an NVIDIA driver is (core/module.h): on a machine without a GPU, a
// process of any build that trains, convolves and asks for a device maps
// no CUDA library. With a GPU the module is loaded and the backend works.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "magmadnn/backend/registry.h"
#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/core/config.h"
#include "magmadnn/core/module.h"
#include "magmadnn/tensor/tensor.h"

namespace {

using namespace magmadnn;

// The lines of /proc/self/maps that name a CUDA library or a module.
std::vector<std::string> cuda_mappings() {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::string> hits;
  for (std::string line; std::getline(maps, line);) {
    for (const char* lib : {"libcuda.", "libcudart", "libcublas", "libcudnn", "libcufft", "libcurand", "libnccl",
                            "libmagmadnn_cuda", "libmagmadnn_nccl"}) {
      if (line.find(lib) != std::string::npos) hits.push_back(line);
    }
  }
  return hits;
}

TEST(CudaModule, WithoutAGpuNoCudaLibraryIsMapped) {
  if (has_cuda_device()) GTEST_SKIP() << "a GPU is present (the module is loaded, as it should be)";
  // What would reach for the GPU: the registry, DEVICE memory, the NCCL communicator.
  EXPECT_FALSE(cuda_unavailable_reason().empty());
  EXPECT_THROW(Tensor<float>({2, 2}, DEVICE), DeviceError);
#if defined(MAGMADNN_HAVE_NCCL)
  EXPECT_THROW(distributed::make_communicator("nccl"), DeviceError);
#endif
  Tensor<float> x({1, 1, 5, 5}, {UNIFORM, {-1.0f, 1.0f}}, HOST);
  EXPECT_EQ(x.size(), 25);
  const std::vector<std::string> hits = cuda_mappings();
  EXPECT_TRUE(hits.empty()) << "mapped: " << hits.front();
}

TEST(CudaModule, TheReasonSaysWhyNoBackendWasLoaded) {
  if (has_cuda_device()) GTEST_SKIP() << "a GPU is present";
#if defined(MAGMADNN_HAVE_CUDA)
  if (!nvidia_driver_present()) {
    EXPECT_NE(cuda_unavailable_reason().find("no NVIDIA driver on this machine"), std::string::npos)
        << cuda_unavailable_reason();
  }
#else
  EXPECT_NE(cuda_unavailable_reason().find("built without CUDA"), std::string::npos) << cuda_unavailable_reason();
#endif
}

TEST(CudaModule, AMissingModuleIsNamedNotFatal) {
  std::string why;
  EXPECT_EQ(load_module("no_such_module", &why), nullptr);
  EXPECT_NE(why.find("libmagmadnn_no_such_module.so."), std::string::npos) << why;
  EXPECT_EQ(module_symbol(nullptr, "anything", &why), nullptr);
}

TEST(CudaModule, WithAGpuTheModuleIsLoaded) {
  if (!has_cuda_device()) GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason();
  EXPECT_FALSE(cuda_mappings().empty());
  Tensor<float> d({4}, {CONSTANT, {2.0f}}, DEVICE);
  EXPECT_EQ(d.get(0), 2.0f);
}

}  // namespace
