// The caching logic of the memory pool behind both backends: MemoryPool is
// plain C++ over an injected raw allocator, here malloc with call counters and
// a switch that makes it run out of memory. The last test checks the host
// backend uses it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "magmadnn/backend/device_buffer.h"
#include "magmadnn/backend/memory_pool.h"
#include "magmadnn/backend/registry.h"
#include "magmadnn/tensor/tensor.h"
#include "magmadnn/core/errors.h"

using magmadnn::DeviceError;
using magmadnn::MemoryStats;
using magmadnn::MemoryPool;
using magmadnn::RawAllocator;

namespace {

// Counts raw calls; fails the next `fail_next` allocations (or all, with
// fail_always) as cudaMalloc does when the device is full.
struct FakeDevice {
  int allocs = 0;  // raw allocate calls, failed ones included
  int frees = 0;
  int fail_next = 0;
  bool fail_always = false;
  std::set<void*> live;  // blocks the fake has handed out and not taken back

  RawAllocator raw() {
    RawAllocator r;
    r.allocate = [this](std::size_t bytes) -> void* {
      ++allocs;
      if (fail_always || fail_next > 0) {
        if (fail_next > 0) --fail_next;
        return nullptr;
      }
      void* p = std::aligned_alloc(256, bytes);
      if (p) live.insert(p);
      return p;
    };
    r.free = [this](void* p) {
      ++frees;
      EXPECT_EQ(live.erase(p), 1u) << "raw free of a pointer the raw allocator did not hand out";
      std::free(p);
    };
    return r;
  }
};

// One "training step": the same sequence of sizes allocated, touched and freed.
const std::vector<std::size_t> kStepSizes = {100, 4096, 4096, 300000, 1 << 20, (3 << 20) + 5, 7, 12 << 20};

void step(MemoryPool& pool) {
  std::vector<void*> blocks;
  for (std::size_t s : kStepSizes) {
    void* p = pool.allocate(s);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0xab, s);  // the whole requested range is usable
    blocks.push_back(p);
  }
  for (void* p : blocks) pool.deallocate(p);
}

}  // namespace

TEST(MemoryPool, RoundsToSizeClasses) {
  EXPECT_EQ(MemoryPool::round_size(1), 512u);
  EXPECT_EQ(MemoryPool::round_size(512), 512u);
  EXPECT_EQ(MemoryPool::round_size(513), 1024u);
  EXPECT_EQ(MemoryPool::round_size(1 << 20), std::size_t{1} << 20);
  EXPECT_EQ(MemoryPool::round_size((1 << 20) + 1), std::size_t{2} << 20);
  EXPECT_EQ(MemoryPool::round_size(3 << 20), std::size_t{4} << 20);
  EXPECT_EQ(MemoryPool::round_size(4 << 20), std::size_t{4} << 20);
}

TEST(MemoryPool, AfterWarmUpRepeatedStepsCallTheRawAllocatorNoMore) {
  FakeDevice dev;
  {
    MemoryPool pool(dev.raw(), "fake device 0");
    step(pool);
    const int warm_allocs = dev.allocs;
    EXPECT_EQ(warm_allocs, static_cast<int>(kStepSizes.size()));  // every block live at once: all misses
    const MemoryStats warm = pool.stats();
    EXPECT_EQ(warm.raw_allocations, kStepSizes.size());
    EXPECT_EQ(warm.bytes_in_use, 0u);

    for (int i = 0; i < 20; ++i) step(pool);

    EXPECT_EQ(dev.allocs, warm_allocs) << "the raw allocator was called after warm-up";
    EXPECT_EQ(dev.frees, 0);
    const MemoryStats s = pool.stats();
    EXPECT_EQ(s.raw_allocations, warm.raw_allocations);
    EXPECT_EQ(s.pool_hits, 20u * kStepSizes.size());
    EXPECT_EQ(s.bytes_in_use, 0u);
    std::size_t total = 0;
    for (std::size_t b : kStepSizes) total += MemoryPool::round_size(b);
    EXPECT_EQ(s.bytes_cached, total);
    EXPECT_EQ(s.peak_bytes_in_use, total);
  }
  EXPECT_EQ(dev.frees, dev.allocs) << "the pool's destructor frees its cache";
  EXPECT_TRUE(dev.live.empty());
}

TEST(MemoryPool, LiveBlocksAreDistinctAndZeroBytesIsNull) {
  FakeDevice dev;
  MemoryPool pool(dev.raw(), "fake device 0");
  EXPECT_EQ(pool.allocate(0), nullptr);
  EXPECT_EQ(dev.allocs, 0);
  pool.deallocate(nullptr);  // ignored
  void* a = pool.allocate(1000);
  void* b = pool.allocate(1000);
  EXPECT_NE(a, b);
  EXPECT_EQ(dev.allocs, 2);
  pool.deallocate(a);
  void* c = pool.allocate(900);  // same class (1024): reuses a
  EXPECT_EQ(c, a);
  EXPECT_EQ(dev.allocs, 2);
  pool.deallocate(b);
  pool.deallocate(c);
}

TEST(MemoryPool, DifferentSizesReuseOnlyCloseFits) {
  FakeDevice dev;
  MemoryPool pool(dev.raw(), "fake device 0");
  void* big = pool.allocate(8 << 20);
  pool.deallocate(big);
  // A 2 MiB request must not take the cached 8 MiB block (75% wasted).
  void* small = pool.allocate(2 << 20);
  EXPECT_NE(small, big);
  EXPECT_EQ(dev.allocs, 2);
  // 7 MiB rounds to 8 MiB: the cached block fits exactly.
  void* again = pool.allocate(7 << 20);
  EXPECT_EQ(again, big);
  EXPECT_EQ(dev.allocs, 2);
  // With the 8 MiB block in use, a cached 10 MiB block serves another 8 MiB
  // request: 2 MiB of slack is within a quarter of the block.
  void* ten = pool.allocate(10 << 20);
  pool.deallocate(ten);
  void* eight = pool.allocate(8 << 20);
  EXPECT_EQ(eight, ten);
  EXPECT_EQ(dev.allocs, 3);
  for (void* p : {small, again, eight}) pool.deallocate(p);
  const MemoryStats s = pool.stats();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.bytes_cached, std::size_t{(2 + 8 + 10)} << 20);
}

TEST(MemoryPool, ReleaseCachedFreesEverythingUnused) {
  FakeDevice dev;
  MemoryPool pool(dev.raw(), "fake device 0");
  void* kept = pool.allocate(4096);
  step(pool);
  const int allocs = dev.allocs;
  pool.release_cached();
  EXPECT_EQ(dev.frees, allocs - 1);  // all but the block still in use
  EXPECT_EQ(dev.live.size(), 1u);
  const MemoryStats s = pool.stats();
  EXPECT_EQ(s.bytes_cached, 0u);
  EXPECT_EQ(s.bytes_in_use, 4096u);
  EXPECT_EQ(s.raw_frees, static_cast<std::uint64_t>(allocs - 1));
  step(pool);  // the cache is empty again: every size is a miss
  EXPECT_EQ(dev.allocs, 2 * allocs - 1);
  pool.deallocate(kept);
}

TEST(MemoryPool, OutOfMemoryReleasesTheCacheAndRetriesOnce) {
  FakeDevice dev;
  MemoryPool pool(dev.raw(), "fake device 0");
  step(pool);  // leaves kStepSizes.size() blocks cached
  const int cached_blocks = static_cast<int>(kStepSizes.size());
  dev.fail_next = 1;
  void* p = pool.allocate(64 << 20);  // a new size: miss, fails, cache released, retry succeeds
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(dev.frees, cached_blocks);
  EXPECT_EQ(pool.stats().bytes_cached, 0u);
  EXPECT_EQ(pool.stats().bytes_in_use, std::size_t{64} << 20);
  pool.deallocate(p);
}

TEST(MemoryPool, OutOfMemoryTwiceThrowsWithTheNumbers) {
  FakeDevice dev;
  MemoryPool pool(dev.raw(), "fake device 3");
  void* held = pool.allocate(3000);  // 3072 in use
  void* freed = pool.allocate(1 << 20);
  pool.deallocate(freed);  // 1 MiB cached
  dev.fail_always = true;
  const int before = dev.allocs;
  try {
    pool.allocate(5000000);
    FAIL() << "allocation succeeded while the device is out of memory";
  } catch (const DeviceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("out of memory on fake device 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("requested 5000000 bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("3072 bytes in use"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1048576 bytes cached"), std::string::npos) << msg;
  }
  EXPECT_EQ(dev.allocs - before, 2) << "exactly one retry";
  EXPECT_EQ(pool.stats().bytes_in_use, 3072u);  // a failed request changes nothing in use
  dev.fail_always = false;
  pool.deallocate(held);
}

TEST(MemoryPool, ConcurrentStepsKeepTheCountersConsistent) {
  FakeDevice dev;
  std::mutex fake_mutex;  // the fake's own bookkeeping is not thread-safe; the pool must not need it to be
  RawAllocator raw = dev.raw();
  RawAllocator locked;
  locked.allocate = [&](std::size_t b) {
    std::lock_guard<std::mutex> l(fake_mutex);
    return raw.allocate(b);
  };
  locked.free = [&](void* p) {
    std::lock_guard<std::mutex> l(fake_mutex);
    raw.free(p);
  };
  MemoryPool pool(locked, "fake device 0");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&pool] {
      for (int i = 0; i < 50; ++i) step(pool);
    });
  for (auto& t : threads) t.join();
  const MemoryStats s = pool.stats();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.raw_allocations + s.pool_hits, 4u * 50u * kStepSizes.size());
  // At most 4 steps' worth of blocks can be live at once.
  EXPECT_LE(s.raw_allocations, 4u * kStepSizes.size());
}

TEST(MemoryPool, HostTensorsOfATrainingStepAllocateNothingNewAfterTheFirst) {
  if (const char* off = std::getenv("MAGMADNN_NO_MEMORY_CACHING"); off && *off && std::string(off) != "0") {
    GTEST_SKIP() << "host memory caching is off (MAGMADNN_NO_MEMORY_CACHING=" << off << ")";
  }
  magmadnn::Backend& b = magmadnn::cpu_backend();
  auto one_step = [] {
    // Forward values, gradients and temporaries of an MLP step, freed in another order.
    std::vector<magmadnn::Tensor<float>> live;
    for (std::int64_t n : {100 * 784, 528 * 784, 100 * 528, 528, 100 * 10, 1}) live.emplace_back(magmadnn::Shape{n}, magmadnn::HOST);
    live.erase(live.begin() + 2);
    live.emplace_back(magmadnn::Shape{100 * 528}, magmadnn::HOST);
  };
  one_step();
  const auto warm = b.memory_stats(0);
  for (int i = 0; i < 5; ++i) one_step();
  const auto s = b.memory_stats(0);
  EXPECT_EQ(s.raw_allocations, warm.raw_allocations) << "the host allocator was called after the first step";
  EXPECT_GT(s.pool_hits, warm.pool_hits);
  EXPECT_GE(s.peak_bytes_in_use, std::uint64_t{528 * 784 * 4});
  b.release_cached_memory();
  EXPECT_EQ(b.memory_stats(0).bytes_cached, 0u);
}

TEST(MemoryPool, WithCachingOffEveryFreeGoesBackToTheRawAllocator) {
  FakeDevice dev;
  MemoryPool pool(dev.raw(), "fake device 0");
  step(pool);
  EXPECT_GT(pool.stats().bytes_cached, 0u);
  pool.set_caching(false);
  EXPECT_EQ(pool.stats().bytes_cached, 0u);  // the cache is emptied at once
  EXPECT_TRUE(dev.live.empty());
  const int allocs = dev.allocs;
  step(pool);
  EXPECT_EQ(dev.allocs, allocs + static_cast<int>(kStepSizes.size()));  // no reuse
  EXPECT_TRUE(dev.live.empty());
  EXPECT_EQ(pool.stats().bytes_cached, 0u);
  EXPECT_EQ(pool.stats().bytes_in_use, 0u);
}

TEST(DeviceBuffer, HoldsBackendMemoryForItsScopeAndZeroBytesIsNull) {
  magmadnn::Backend& b = magmadnn::cpu_backend();
  const std::uint64_t before = b.memory_stats(0).bytes_in_use;
  {
    magmadnn::DeviceBuffer buf(b, 1000);
    ASSERT_NE(buf.data(), nullptr);
    EXPECT_EQ(buf.bytes(), 1000u);
    EXPECT_EQ(static_cast<void*>(buf.as<float>()), buf.data());
    std::memset(buf.data(), 0, buf.bytes());
    EXPECT_GE(b.memory_stats(0).bytes_in_use, before + 1000);
    const magmadnn::DeviceBuffer empty(b, 0);
    EXPECT_EQ(empty.data(), nullptr);
  }
  EXPECT_EQ(b.memory_stats(0).bytes_in_use, before);
}
