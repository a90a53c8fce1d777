#include "magmadnn/parallel/model_parallel/batch_ops.h"

#include "magmadnn/parallel/model_parallel/group_tensor.h"

namespace magmadnn::distributed::mp {
namespace {

// Rank r's rows of a {rows, ...} batch: a view of its storage.
template <typename T>
Tensor<T> own_rows(const Tensor<T>& whole, const Communicator& group) {
  const Shard s = shard_of(whole.shape()[0], group.size(), group.rank());
  return whole.slice(s.offset, s.offset + s.extent);
}

void check_rows(std::int64_t rows, const Communicator& group, const char* what) {
  MAGMADNN_CHECK(rows >= group.size(), ShapeError,
                 what << ": a batch of " << rows << " rows cannot be split over " << group.size()
                      << " ranks (each needs at least one row; make every batch, the last one included, at least "
                      << group.size() << " rows)");
}

}  // namespace

template <typename T>
Tensor<T> allgather_rows(Communicator& comm, const Tensor<T>& local, std::int64_t rows) {
  const int p = comm.size(), r = comm.rank();
  const Shard mine = shard_of(rows, p, r);
  MAGMADNN_CHECK(local.ndim() >= 1 && local.shape()[0] == mine.extent, ShapeError,
                 "allgather_rows: rank " << r << " of " << p << " holds rows [" << mine.offset << ", "
                                         << mine.offset + mine.extent << ") of " << rows << ", got a tensor of shape "
                                         << local.shape());
  std::vector<std::int64_t> dims = local.shape().dims();
  dims[0] = rows;
  // A row shard is one contiguous run of the result: the axis-0 case of the
  // group's shard allgather (padded to the longest shard, as it moves equal counts).
  return allgather_axis(comm, local, Shape(dims), 0);
}

// -- gather_batch: allgather forward, own rows backward ------------------------------------
template <typename T>
GatherBatchNode<T>::GatherBatchNode(op::OpPtr<T> x, op::OpPtr<T> whole, GroupPtr group)
    : op::Operation<T>("gather_batch", {std::move(x), std::move(whole)}), group_(std::move(group)) {
  MAGMADNN_CHECK(group_ != nullptr, ValueError, this->name_ << ": needs a communicator for its group, got none");
}

template <typename T>
Shape GatherBatchNode<T>::infer_shape(const std::vector<Shape>& in) const {
  MAGMADNN_CHECK(in[0].ndim() >= 1 && in[1].ndim() >= 1, ShapeError,
                 "gather_batch: needs batched tensors, got " << in[0] << " and " << in[1]);
  const std::int64_t rows = in[1][0];
  // While the graph is built the batch axis is free (-1): only its extent
  // at evaluation is checked.
  if (rows >= 0 && in[0][0] >= 0) {
    const Shard s = shard_of(rows, group().size(), group().rank());
    MAGMADNN_CHECK(in[0][0] == s.extent, ShapeError,
                   "gather_batch: rank " << group().rank() << " holds " << s.extent << " of " << rows
                                         << " rows, so its input must have " << s.extent << " rows, got " << in[0]);
  }
  std::vector<std::int64_t> dims = in[0].dims();
  dims[0] = rows;
  return Shape(dims);
}

template <typename T>
void GatherBatchNode<T>::forward() {
  const std::int64_t rows = this->in(1).shape()[0];
  check_rows(rows, group(), "gather_batch");
  Tensor<T>& out = this->output_buffer(infer_shape({this->in(0).shape(), this->in(1).shape()}), this->in(0));
  out.copy_from(allgather_rows(group(), this->in(0), rows));
}

template <typename T>
void GatherBatchNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  // dy is the same on every rank (see the header): this rank's rows of it
  // are the whole loss's gradient with respect to its shard.
  if (needed[0]) gin[0] = Tensor<T>(own_rows(g, group()));
}

// -- scatter_batch: own rows forward, allgather backward -----------------------------------
template <typename T>
Shape ScatterBatchNode<T>::infer_shape(const std::vector<Shape>& in) const {
  MAGMADNN_CHECK(in[0].ndim() >= 1, ShapeError, "scatter_batch: needs a batched tensor, got " << in[0]);
  std::vector<std::int64_t> dims = in[0].dims();
  if (dims[0] >= 0) {
    // Not checked against the group size here: a network is built on a
    // placeholder of one row; forward() refuses a batch too small to split.
    dims[0] = shard_of(dims[0], this->group().size(), this->group().rank()).extent;
  }
  return Shape(dims);
}

template <typename T>
void ScatterBatchNode<T>::forward() {
  const Tensor<T>& x = this->in(0);
  check_rows(x.shape()[0], this->group(), "scatter_batch");
  Tensor<T>& out = this->output_buffer(infer_shape({x.shape()}), x);
  out.copy_from(own_rows(x, this->group()));
}

template <typename T>
void ScatterBatchNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  // x was whole on every rank and each rank used its own rows, so dx is the
  // ranks' row gradients laid end to end.
  if (needed[0]) gin[0] = allgather_rows(this->group(), g, this->in(0).shape()[0]);
}

template class GatherBatchNode<float>;
template class GatherBatchNode<double>;
template class ScatterBatchNode<float>;
template class ScatterBatchNode<double>;
template Tensor<float> allgather_rows<float>(Communicator&, const Tensor<float>&, std::int64_t);
template Tensor<double> allgather_rows<double>(Communicator&, const Tensor<double>&, std::int64_t);

}  // namespace magmadnn::distributed::mp
