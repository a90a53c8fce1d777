// MpiCommunicator with device buffers (CUDA builds with a GPU; otherwise
// the test skips itself, on every rank alike): the results must equal the
// host ones, whether MPI reads device memory directly or through staging.
#include <gtest/gtest.h>

#include <vector>

#include "magmadnn/backend/registry.h"
#include "magmadnn/memory/memory_manager.h"
#include "mpi_world.h"

namespace {

using namespace magmadnn;
using namespace magmadnn::distributed;
using mpitest::value;
using magmadnn::distributed::ReduceOp;  // not the backend's ReduceOp

TEST(MpiDevice, CollectivesAndMessagesOnDeviceBuffers) {
  MpiCommunicator& c = world();
  if (!c.supports(Place::device) || !has_cuda_device())
    GTEST_SKIP() << "needs a CUDA build and a GPU (" << cuda_unavailable_reason() << ")";
  const int p = c.size();
  const std::size_t n = 1000;
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<float>(value(c.rank(), i));
  MemoryManager<float> dev(n, DEVICE);
  auto device_buffer = [&] { return Buffer{dev.mutable_device_data(), n, dtype::f32, Place::device}; };

  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
    dev.copy_from_host(host.data(), n);
    c.allreduce(device_buffer(), op);
    std::vector<float> got(n);
    dev.copy_to_host(got.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const double sum = p * (p + 1) / 2.0 + p * static_cast<double>(i % 7);
      ASSERT_EQ(got[i], op == ReduceOp::sum ? sum : sum / p) << reduce_op_name(op) << " element " << i;
    }
  }

  dev.copy_from_host(host.data(), n);
  c.broadcast(device_buffer(), p - 1);
  std::vector<float> got(n);
  dev.copy_to_host(got.data(), n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], value(p - 1, i));

  MemoryManager<float> all(n * p, DEVICE);
  dev.copy_from_host(host.data(), n);
  c.allgather(ConstBuffer{dev.device_data(), n, dtype::f32, Place::device},
              Buffer{all.mutable_device_data(), n * p, dtype::f32, Place::device});
  std::vector<float> gathered(n * p);
  all.copy_to_host(gathered.data(), n * p);
  for (int r = 0; r < p; ++r) ASSERT_EQ(gathered[r * n + 5], value(r, 5)) << "block " << r;

  const int next = (c.rank() + 1) % p;
  const int prev = (c.rank() + p - 1) % p;
  MemoryManager<float> in(n, DEVICE);
  dev.copy_from_host(host.data(), n);
  RequestPtr r = c.irecv(Buffer{in.mutable_device_data(), n, dtype::f32, Place::device}, prev, 21);
  RequestPtr s = c.isend(ConstBuffer{dev.device_data(), n, dtype::f32, Place::device}, next, 21);
  s->wait();
  r->wait();
  in.copy_to_host(got.data(), n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], value(prev, i));
}

}  // namespace
