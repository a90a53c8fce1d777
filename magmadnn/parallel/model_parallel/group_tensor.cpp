#include "magmadnn/parallel/model_parallel/group_tensor.h"

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

namespace {

// A tensor of two or more axes as {rows, n, unit}: axis 1 is the split one,
// the trailing axes travel whole as blocks of `unit` elements.
struct Axis1 {
  std::int64_t rows, n, unit;
};
Axis1 axis1_of(const Shape& s) {
  std::int64_t unit = 1;
  for (std::int64_t a = 2; a < s.ndim(); ++a) unit *= s[a];
  return {s[0], s[1], unit};
}
Shape with_axis1(const Shape& s, std::int64_t n) {
  std::vector<std::int64_t> d = s.dims();
  d[1] = n;
  return Shape(d);
}

}  // namespace

template <typename T>
Tensor<T> allgather_axis1(Communicator& comm, const Tensor<T>& local, std::int64_t n) {
  const int p = comm.size(), r = comm.rank();
  const Shard mine = shard_of(n, p, r);
  MAGMADNN_CHECK(local.ndim() >= 2 && local.shape()[1] == mine.extent, ShapeError,
                 "allgather_axis1: rank " << r << " of " << p << " holds indices [" << mine.offset << ", "
                                          << mine.offset + mine.extent << ") of the " << n
                                          << " along axis 1, so needs {rows, " << mine.extent << ", ...}, got "
                                          << local.shape());
  if (p == 1) return Tensor<T>(local);
  const Axis1 v = axis1_of(local.shape());
  // The blocks are rearranged on the host: a shard is a strided part of the
  // result, and the volumes here (a batch of activations) are small next to
  // the GEMMs and convolutions around them.
  const std::int64_t width = max_shard(n, p) * v.unit, mine_w = mine.extent * v.unit, row = n * v.unit;
  const std::vector<T> in = local.to_vector();
  std::vector<T> send(static_cast<std::size_t>(v.rows * width), T(0));
  for (std::int64_t i = 0; i < v.rows; ++i) std::copy_n(in.begin() + i * mine_w, mine_w, send.begin() + i * width);
  std::vector<T> recv(send.size() * static_cast<std::size_t>(p));
  comm.allgather(host_buffer(static_cast<const T*>(send.data()), send.size()),
                 host_buffer(recv.data(), recv.size()));
  std::vector<T> out(static_cast<std::size_t>(v.rows * row));
  for (int q = 0; q < p; ++q) {
    const Shard s = shard_of(n, p, q);
    const T* block = recv.data() + static_cast<std::int64_t>(q) * v.rows * width;
    for (std::int64_t i = 0; i < v.rows; ++i)
      std::copy_n(block + i * width, s.extent * v.unit, out.begin() + i * row + s.offset * v.unit);
  }
  return Tensor<T>::from_vector(with_axis1(local.shape(), n), out, local.get_memory_type(), local.get_device_id());
}

template <typename T>
Tensor<T> take_axis1(const Tensor<T>& full, Shard s) {
  MAGMADNN_CHECK(full.ndim() >= 2 && s.offset >= 0 && s.extent >= 0 && s.offset + s.extent <= full.shape()[1],
                 ShapeError,
                 "take_axis1: indices [" << s.offset << ", " << s.offset + s.extent << ") of axis 1 of "
                                         << full.shape());
  const Axis1 v = axis1_of(full.shape());
  const std::int64_t row = v.n * v.unit, kept = s.extent * v.unit;
  const std::vector<T> in = full.to_vector();
  std::vector<T> out(static_cast<std::size_t>(v.rows * kept));
  for (std::int64_t i = 0; i < v.rows; ++i)
    std::copy_n(in.begin() + i * row + s.offset * v.unit, kept, out.begin() + i * kept);
  return Tensor<T>::from_vector(with_axis1(full.shape(), s.extent), out, full.get_memory_type(),
                                full.get_device_id());
}

template <typename T>
Tensor<T> allgather_columns(Communicator& comm, const Tensor<T>& local, std::int64_t cols) {
  MAGMADNN_CHECK(local.ndim() == 2, ShapeError,
                 "allgather_columns: needs a {rows, cols} matrix, got " << local.shape());
  return allgather_axis1(comm, local, cols);
}

template <typename T>
Tensor<T> take_columns(const Tensor<T>& full, Shard s) {
  MAGMADNN_CHECK(full.ndim() == 2, ShapeError, "take_columns: needs a {rows, cols} matrix, got " << full.shape());
  return take_axis1(full, s);
}

namespace {

// `s` as {prod of the axes before `axis`, s[axis], prod of the axes after}.
Shape around_axis(const Shape& s, std::int64_t axis, const char* who) {
  MAGMADNN_CHECK(axis >= 0 && axis < s.ndim(), ShapeError, who << ": axis " << axis << " of a tensor " << s);
  std::int64_t before = 1, after = 1;
  for (std::int64_t a = 0; a < axis; ++a) before *= s[a];
  for (std::int64_t a = axis + 1; a < s.ndim(); ++a) after *= s[a];
  return Shape{before, s[axis], after};
}

}  // namespace

template <typename T>
Tensor<T> allgather_axis(Communicator& comm, const Tensor<T>& local, const Shape& whole, std::int64_t axis) {
  const Shard mine = shard_of(around_axis(whole, axis, "allgather_axis")[1], comm.size(), comm.rank());
  std::vector<std::int64_t> part = whole.dims();
  part[static_cast<std::size_t>(axis)] = mine.extent;
  MAGMADNN_CHECK(local.shape() == Shape(part), ShapeError,
                 "allgather_axis: rank " << comm.rank() << " of " << comm.size() << " holds indices ["
                                         << mine.offset << ", " << mine.offset + mine.extent << ") of axis " << axis
                                         << " of " << whole << ", so needs " << Shape(part) << ", got "
                                         << local.shape());
  Tensor<T> g = allgather_axis1(comm, local.view(around_axis(local.shape(), axis, "allgather_axis")), whole[axis]);
  g.reshape(whole);
  return g;
}

template <typename T>
Tensor<T> take_axis(const Tensor<T>& full, std::int64_t axis, Shard s) {
  Tensor<T> t = take_axis1(full.view(around_axis(full.shape(), axis, "take_axis")), s);
  std::vector<std::int64_t> part = full.shape().dims();
  part[static_cast<std::size_t>(axis)] = s.extent;
  t.reshape(Shape(part));
  return t;
}

#define MAGMADNN_INSTANTIATE(T)                                                          \
  template void allreduce_sum<T>(Communicator&, Tensor<T>&);                             \
  template Tensor<T> allgather_axis1<T>(Communicator&, const Tensor<T>&, std::int64_t);   \
  template Tensor<T> take_axis1<T>(const Tensor<T>&, Shard);                             \
  template Tensor<T> allgather_columns<T>(Communicator&, const Tensor<T>&, std::int64_t); \
  template Tensor<T> take_columns<T>(const Tensor<T>&, Shard);                            \
  template Tensor<T> allgather_axis<T>(Communicator&, const Tensor<T>&, const Shape&, std::int64_t); \
  template Tensor<T> take_axis<T>(const Tensor<T>&, std::int64_t, Shard);
MAGMADNN_INSTANTIATE(float)
MAGMADNN_INSTANTIATE(double)
#undef MAGMADNN_INSTANTIATE

}  // namespace magmadnn::distributed::mp
