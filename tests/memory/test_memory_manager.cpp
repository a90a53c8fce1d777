// MemoryManager on the memory types this machine allows. The GPU pairs of
// copy_from are covered in tests/cuda/test_cuda_backend.cpp.
#include <gtest/gtest.h>

#include <numeric>

#include "magmadnn/core/errors.h"
#include "magmadnn/memory/memory_manager.h"
#include "support/gpu.h"

using namespace magmadnn;

namespace {
template <typename T>
void fill_iota(MemoryManager<T>& m, T start) {
  std::vector<T> v(m.get_size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + T(i);
  m.copy_from_host(v.data(), v.size());
}
}  // namespace

TEST(MemoryManager, SlidesCode) {
  size_t n_vals = 20;
  // HOST, DEVICE, MANAGED, CUDA_MANAGED
  memory_t mem_type = MANAGED;
  device_t device_id = 0;
  MemoryManager<float> mm(n_vals, mem_type, device_id);
  EXPECT_EQ(mm.get_size(), 20u);
  mm.set(3, 2.5f);
  EXPECT_EQ(mm.get(3), 2.5f);
}

TEST(MemoryManager, CopyBetweenEveryAvailablePair) {
  for (memory_t src_t : test::available_memory_types()) {
    for (memory_t dst_t : test::available_memory_types()) {
      MemoryManager<double> src(50, src_t, 0), dst(60, dst_t, 0);
      fill_iota(src, 1.0);
      fill_iota(dst, -100.0);
      dst.copy_from(src, 10, 5, 30);  // dst[5..35) = src[10..40)
      for (std::size_t i = 0; i < 60; ++i) {
        const double expect = (i >= 5 && i < 35) ? 1.0 + double(i - 5 + 10) : -100.0 + double(i);
        ASSERT_EQ(dst.get(i), expect) << memory_name(src_t) << " -> " << memory_name(dst_t) << " at " << i;
      }
      MemoryManager<double> whole(50, dst_t, 0);
      whole.copy_from(src);
      for (std::size_t i = 0; i < 50; ++i) ASSERT_EQ(whole.get(i), 1.0 + double(i));
    }
  }
}

TEST(MemoryManager, CopyRangesAreChecked) {
  MemoryManager<float> a(10, HOST), b(10, MANAGED);
  EXPECT_THROW(b.copy_from(a, 5, 0, 6), IndexError);
  EXPECT_THROW(b.copy_from(a, 0, 8, 3), IndexError);
  MemoryManager<float> big(11, HOST);
  EXPECT_THROW(b.copy_from(big), IndexError);
  try {
    b.copy_from(a, 0, 8, 3);
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("[8, 11)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(a.get(10), IndexError);
  EXPECT_THROW(a.set(10, 1.f), IndexError);
}

TEST(MemoryManager, OverlappingCopyWithinOneManager) {
  MemoryManager<int> m(10, HOST);
  for (int i = 0; i < 10; ++i) m.set(std::size_t(i), i);
  m.copy_from(m, 0, 2, 8);  // shift right by 2, overlapping
  for (int i = 2; i < 10; ++i) EXPECT_EQ(m.get(std::size_t(i)), i - 2);
}

TEST(MemoryManager, ManagedWithoutGpuLivesOnHost) {
  if (has_cuda_device()) GTEST_SKIP() << "a GPU is present; tests/cuda covers MANAGED on the device";
  MemoryManager<float> m(8, MANAGED);
  EXPECT_FALSE(m.on_device());
  fill_iota(m, 0.0f);
  EXPECT_EQ(m.host_data()[7], 7.0f);
  EXPECT_EQ(m.data(), m.host_data());
  m.sync(true);
  m.sync(false);  // nothing to do without a device, must not throw
  m.prefetch(false);
  EXPECT_THROW(m.device_data(), DeviceError);
}

TEST(MemoryManager, DeviceMemoryWithoutGpuSaysWhy) {
  if (has_cuda_device()) GTEST_SKIP() << "a GPU is present";
  for (memory_t t : {DEVICE, CUDA_MANAGED}) {
    try {
      MemoryManager<float> m(4, t, 0);
      FAIL() << memory_name(t) << " allocated without a GPU";
    } catch (const DeviceError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(memory_name(t)), std::string::npos) << msg;
      EXPECT_NE(msg.find(cuda_unavailable_reason()), std::string::npos) << msg;
    }
  }
}

TEST(MemoryManager, HostHasNoDevicePointer) {
  MemoryManager<float> m(4, HOST);
  EXPECT_THROW(m.get_device_ptr(), DeviceError);
  EXPECT_THROW(m.get_cuda_managed_ptr(), DeviceError);
  EXPECT_NE(m.get_host_ptr(), nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(m.get_host_ptr()) % 64, 0u);
}

TEST(MemoryManager, HalfAndZeroSize) {
  MemoryManager<half> h(3, MANAGED);
  h.set(1, half(1.5f));
  EXPECT_EQ(float(h.get(1)), 1.5f);
  MemoryManager<float> z(0, HOST);
  EXPECT_EQ(z.get_size(), 0u);
  MemoryManager<float> z2(0, MANAGED);
  z2.copy_from(z);
}
