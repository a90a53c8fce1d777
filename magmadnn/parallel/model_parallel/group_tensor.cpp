#include "magmadnn/parallel/model_parallel/group_tensor.h"

#include <algorithm>
#include <vector>

#include "magmadnn/dmath/dist_matrix.h"
#include "magmadnn/dmath/reduce.h"

namespace magmadnn::distributed::mp {

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

// `t`'s elements, row-major, as m's local matrix (of t's size).
template <typename T>
void load_local(const Tensor<T>& t, dmath::DistMatrix<T>& m) {
  const Tensor<T> host = t.on_device() ? t.to(HOST) : Tensor<T>();
  std::copy_n(t.on_device() ? host.host_data() : t.host_data(), t.size(), m.local_data());
  m.mark_changed();
}

// m's local matrix as a tensor of `shape` in `like`'s memory.
template <typename T>
Tensor<T> tensor_of(const dmath::DistMatrix<T>& m, const Shape& shape, const Tensor<T>& like) {
  Tensor<T> t(shape, like.get_memory_type(), like.get_device_id());
  t.copy_from_host(m.local_data(), m.local_rows() * m.local_cols());
  return t;
}

}  // namespace

template <typename T>
void sum_over_group(Communicator& comm, T* values, std::int64_t n) {
  if (comm.size() == 1 || n == 0) return;
  // The ranks' arrays as the rows of a P x n matrix, one row each; the sum
  // down its columns, whole on every rank, is dMath's column reduction.
  const int p = comm.size();
  dmath::DistMatrix<T> parts(comm, dmath::Layout::row_block(p, n, p));
  std::copy_n(values, n, parts.local_data());
  parts.mark_changed();
  dmath::DistMatrix<T> sum(comm, dmath::Layout::replicated(1, n));
  dmath::reduce_cols(parts, ReduceOp::sum, sum);
  std::copy_n(sum.local_data(), n, values);
}

template <typename T>
void allreduce_sum(Communicator& comm, Tensor<T>& t) {
  if (comm.size() == 1 || t.empty()) return;
  if (!t.on_device()) return sum_over_group(comm, t.mutable_host_data(), t.size());
  Tensor<T> host = t.to(HOST);
  sum_over_group(comm, host.mutable_host_data(), host.size());
  t.copy_from(host);
}

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
  // Viewed as {rows, n * unit}, the shards are a col_shards layout in blocks
  // of `unit`, and the whole tensor on every rank is its replicated layout:
  // a dMath redistribution (one allgather of the padded local matrices).
  const Axis1 v = axis1_of(local.shape());
  dmath::DistMatrix<T> part(comm, dmath::Layout::col_shards(v.rows, n * v.unit, p, v.unit));
  load_local(local, part);
  const dmath::DistMatrix<T> whole = part.redistribute(dmath::Layout::replicated(v.rows, n * v.unit));
  return tensor_of(whole, with_axis1(local.shape(), n), local);
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
  template void sum_over_group<T>(Communicator&, T*, std::int64_t);                      \
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
