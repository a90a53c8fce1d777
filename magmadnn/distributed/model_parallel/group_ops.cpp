#include "magmadnn/distributed/model_parallel/group_ops.h"

#include "magmadnn/distributed/model_parallel/group_tensor.h"

namespace magmadnn::distributed::mp {

template <typename T>
GroupNode<T>::GroupNode(std::string name, op::OpPtr<T> x, GroupPtr group)
    : op::Operation<T>(std::move(name), {std::move(x)}), group_(std::move(group)) {
  MAGMADNN_CHECK(group_ != nullptr, ValueError, this->name_ << ": needs a communicator for its group, got none");
}

// -- copy_to_group: identity forward, allreduce backward ------------------------------------
template <typename T>
void CopyToGroupNode<T>::forward() {
  this->output_buffer(this->in(0).shape(), this->in(0)).copy_from(this->in(0));
}

template <typename T>
void CopyToGroupNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  // Every rank used the whole x against its own weight slice, so dx is the
  // sum of the ranks' partial gradients.
  if (!needed[0]) return;
  gin[0] = Tensor<T>(g);
  allreduce_sum(this->group(), gin[0]);
}

// -- reduce_from_group: allreduce forward, identity backward --------------------------------
template <typename T>
void ReduceFromGroupNode<T>::forward() {
  Tensor<T>& out = this->output_buffer(this->in(0).shape(), this->in(0));
  out.copy_from(this->in(0));
  allreduce_sum(this->group(), out);
}

template <typename T>
void ReduceFromGroupNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed,
                                      std::vector<Tensor<T>>& gin) {
  // y = sum over ranks of x_r, so dy/dx_r is the identity on every rank.
  if (needed[0]) gin[0] = Tensor<T>(g);
}

// -- gather_columns: allgather forward, own slice backward ----------------------------------
template <typename T>
GatherColumnsNode<T>::GatherColumnsNode(op::OpPtr<T> x, GroupPtr group, std::int64_t cols)
    : GroupNode<T>("gather_columns", std::move(x), std::move(group)), cols_(cols) {
  MAGMADNN_CHECK(cols_ >= this->group().size(), ValueError,
                 "gather_columns: " << cols_ << " columns cannot be split over " << this->group().size()
                                    << " ranks (each needs at least one)");
}

template <typename T>
Shape GatherColumnsNode<T>::infer_shape(const std::vector<Shape>& in) const {
  const Shard s = shard_of(cols_, this->group().size(), this->group().rank());
  MAGMADNN_CHECK(in[0].ndim() == 2 && in[0][1] == s.extent, ShapeError,
                 "gather_columns: rank " << this->group().rank() << " holds " << s.extent << " of " << cols_
                                         << " columns, so its input must be {rows, " << s.extent << "}, got "
                                         << in[0]);
  return Shape{in[0][0], cols_};
}

template <typename T>
void GatherColumnsNode<T>::forward() {
  Tensor<T>& out = this->output_buffer(infer_shape({this->in(0).shape()}), this->in(0));
  out.copy_from(allgather_columns(this->group(), this->in(0), cols_));
}

template <typename T>
void GatherColumnsNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed,
                                    std::vector<Tensor<T>>& gin) {
  if (needed[0]) gin[0] = take_columns(g, shard_of(cols_, this->group().size(), this->group().rank()));
}

// -- scatter_columns: own slice forward, allgather backward ---------------------------------
template <typename T>
Shape ScatterColumnsNode<T>::infer_shape(const std::vector<Shape>& in) const {
  const int p = this->group().size();
  MAGMADNN_CHECK(in[0].ndim() == 2 && in[0][1] >= p, ShapeError,
                 "scatter_columns: needs a {rows, cols} input with at least one column per rank (" << p
                                                                                                  << "), got "
                                                                                                  << in[0]);
  return Shape{in[0][0], shard_of(in[0][1], p, this->group().rank()).extent};
}

template <typename T>
void ScatterColumnsNode<T>::forward() {
  const Tensor<T>& x = this->in(0);
  Tensor<T>& out = this->output_buffer(infer_shape({x.shape()}), x);
  out.copy_from(take_columns(x, shard_of(x.shape()[1], this->group().size(), this->group().rank())));
}

template <typename T>
void ScatterColumnsNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed,
                                     std::vector<Tensor<T>>& gin) {
  if (needed[0]) gin[0] = allgather_columns(this->group(), g, this->in(0).shape()[1]);
}

template class GroupNode<float>;
template class GroupNode<double>;
template class CopyToGroupNode<float>;
template class CopyToGroupNode<double>;
template class ReduceFromGroupNode<float>;
template class ReduceFromGroupNode<double>;
template class GatherColumnsNode<float>;
template class GatherColumnsNode<double>;
template class ScatterColumnsNode<float>;
template class ScatterColumnsNode<double>;

}  // namespace magmadnn::distributed::mp
