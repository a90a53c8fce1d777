#include "magmadnn/distributed/model_parallel/group_tensor.h"

#include <algorithm>
#include <vector>

namespace magmadnn::distributed::mp {

template <typename T>
void allreduce_sum(Communicator& comm, Tensor<T>& t) {
  if (comm.size() == 1 || t.empty()) return;
  const auto n = static_cast<std::size_t>(t.size());
  if (!t.on_device()) {
    comm.allreduce(host_buffer(t.mutable_host_data(), n), ReduceOp::sum);
  } else if (comm.supports(Place::device)) {
    comm.allreduce({t.mutable_device_data(), n, dtype_v<T>, Place::device}, ReduceOp::sum);
  } else {
    Tensor<T> h = t.to(HOST);
    comm.allreduce(host_buffer(h.mutable_host_data(), n), ReduceOp::sum);
    t.copy_from(h);
  }
}

template <typename T>
Tensor<T> allgather_columns(Communicator& comm, const Tensor<T>& local, std::int64_t cols) {
  const int p = comm.size(), r = comm.rank();
  const Shard mine = shard_of(cols, p, r);
  MAGMADNN_CHECK(local.ndim() == 2 && local.shape()[1] == mine.extent, ShapeError,
                 "allgather_columns: rank " << r << " of " << p << " holds columns [" << mine.offset << ", "
                                            << mine.offset + mine.extent << ") of " << cols << ", so needs {rows, "
                                            << mine.extent << "}, got " << local.shape());
  const std::int64_t rows = local.shape()[0];
  if (p == 1) return Tensor<T>(local);
  // The columns are rearranged on the host: a shard is a strided block of
  // the result, and the volumes here (a batch of activations) are small
  // next to the GEMMs around them.
  const std::int64_t width = max_shard(cols, p);
  const std::vector<T> in = local.to_vector();
  std::vector<T> send(static_cast<std::size_t>(rows * width), T(0));
  for (std::int64_t i = 0; i < rows; ++i)
    std::copy_n(in.begin() + i * mine.extent, mine.extent, send.begin() + i * width);
  std::vector<T> recv(send.size() * static_cast<std::size_t>(p));
  comm.allgather(host_buffer(static_cast<const T*>(send.data()), send.size()),
                 host_buffer(recv.data(), recv.size()));
  std::vector<T> out(static_cast<std::size_t>(rows * cols));
  for (int q = 0; q < p; ++q) {
    const Shard s = shard_of(cols, p, q);
    const T* block = recv.data() + static_cast<std::int64_t>(q) * rows * width;
    for (std::int64_t i = 0; i < rows; ++i)
      std::copy_n(block + i * width, s.extent, out.begin() + i * cols + s.offset);
  }
  return Tensor<T>::from_vector(Shape{rows, cols}, out, local.get_memory_type(), local.get_device_id());
}

template <typename T>
Tensor<T> take_columns(const Tensor<T>& full, Shard s) {
  MAGMADNN_CHECK(full.ndim() == 2 && s.offset >= 0 && s.extent >= 0 && s.offset + s.extent <= full.shape()[1],
                 ShapeError,
                 "take_columns: columns [" << s.offset << ", " << s.offset + s.extent << ") of " << full.shape());
  const std::int64_t rows = full.shape()[0], cols = full.shape()[1];
  const std::vector<T> in = full.to_vector();
  std::vector<T> out(static_cast<std::size_t>(rows * s.extent));
  for (std::int64_t i = 0; i < rows; ++i)
    std::copy_n(in.begin() + i * cols + s.offset, s.extent, out.begin() + i * s.extent);
  return Tensor<T>::from_vector(Shape{rows, s.extent}, out, full.get_memory_type(), full.get_device_id());
}

#define MAGMADNN_INSTANTIATE(T)                                                          \
  template void allreduce_sum<T>(Communicator&, Tensor<T>&);                             \
  template Tensor<T> allgather_columns<T>(Communicator&, const Tensor<T>&, std::int64_t); \
  template Tensor<T> take_columns<T>(const Tensor<T>&, Shard);
MAGMADNN_INSTANTIATE(float)
MAGMADNN_INSTANTIATE(double)
#undef MAGMADNN_INSTANTIATE

}  // namespace magmadnn::distributed::mp
