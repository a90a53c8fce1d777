#include "magmadnn/parallel/model_parallel/group_ops.h"

#include "magmadnn/parallel/model_parallel/group_tensor.h"

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

// -- gather / scatter along a split axis 1 ---------------------------------------------------
namespace {

// The rank of tensor a split axis belongs to, and the names used for it.
std::int64_t ndim_of(SplitAxis a) { return a == SplitAxis::columns ? 2 : 4; }
const char* noun(SplitAxis a) { return a == SplitAxis::columns ? "columns" : "channels"; }
const char* layout(SplitAxis a) { return a == SplitAxis::columns ? "{rows, cols}" : "{N, C, H, W}"; }
std::string op_name(const char* verb, SplitAxis a) { return std::string(verb) + "_" + noun(a); }

}  // namespace

template <typename T>
GatherSplitNode<T>::GatherSplitNode(op::OpPtr<T> x, GroupPtr group, std::int64_t n, SplitAxis axis)
    : GroupNode<T>(op_name("gather", axis), std::move(x), std::move(group)), n_(n), axis_(axis) {
  MAGMADNN_CHECK(n_ >= this->group().size(), ValueError,
                 this->name_ << ": " << n_ << " " << noun(axis_) << " cannot be split over " << this->group().size()
                             << " ranks (each needs at least one)");
}

template <typename T>
std::string GatherSplitNode<T>::kind() const {
  return op_name("gather", axis_);
}

template <typename T>
Shape GatherSplitNode<T>::infer_shape(const std::vector<Shape>& in) const {
  const Shard s = shard_of(n_, this->group().size(), this->group().rank());
  MAGMADNN_CHECK(in[0].ndim() == ndim_of(axis_) && in[0][1] == s.extent, ShapeError,
                 this->name_ << ": rank " << this->group().rank() << " holds " << s.extent << " of " << n_ << " "
                             << noun(axis_) << ", so its input must be " << layout(axis_) << " with " << s.extent
                             << " in axis 1, got " << in[0]);
  std::vector<std::int64_t> d = in[0].dims();
  d[1] = n_;
  return Shape(d);
}

template <typename T>
void GatherSplitNode<T>::forward() {
  Tensor<T>& out = this->output_buffer(infer_shape({this->in(0).shape()}), this->in(0));
  out.copy_from(allgather_axis1(this->group(), this->in(0), n_));
}

template <typename T>
void GatherSplitNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  // The adjoint of concatenation is slicing: each rank keeps its own part of dy.
  if (needed[0]) gin[0] = take_axis1(g, shard_of(n_, this->group().size(), this->group().rank()));
}

template <typename T>
ScatterSplitNode<T>::ScatterSplitNode(op::OpPtr<T> x, GroupPtr group, SplitAxis axis)
    : GroupNode<T>(op_name("scatter", axis), std::move(x), std::move(group)), axis_(axis) {}

template <typename T>
std::string ScatterSplitNode<T>::kind() const {
  return op_name("scatter", axis_);
}

template <typename T>
Shape ScatterSplitNode<T>::infer_shape(const std::vector<Shape>& in) const {
  const int p = this->group().size();
  MAGMADNN_CHECK(in[0].ndim() == ndim_of(axis_) && in[0][1] >= p, ShapeError,
                 this->name_ << ": needs a " << layout(axis_) << " input with at least one of its " << noun(axis_)
                             << " per rank (" << p << "), got " << in[0]);
  std::vector<std::int64_t> d = in[0].dims();
  d[1] = shard_of(in[0][1], p, this->group().rank()).extent;
  return Shape(d);
}

template <typename T>
void ScatterSplitNode<T>::forward() {
  const Tensor<T>& x = this->in(0);
  Tensor<T>& out = this->output_buffer(infer_shape({x.shape()}), x);
  out.copy_from(take_axis1(x, shard_of(x.shape()[1], this->group().size(), this->group().rank())));
}

template <typename T>
void ScatterSplitNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed,
                                   std::vector<Tensor<T>>& gin) {
  if (needed[0]) gin[0] = allgather_axis1(this->group(), g, this->in(0).shape()[1]);
}

template class GroupNode<float>;
template class GroupNode<double>;
template class CopyToGroupNode<float>;
template class CopyToGroupNode<double>;
template class ReduceFromGroupNode<float>;
template class ReduceFromGroupNode<double>;
template class GatherSplitNode<float>;
template class GatherSplitNode<double>;
template class ScatterSplitNode<float>;
template class ScatterSplitNode<double>;

}  // namespace magmadnn::distributed::mp
