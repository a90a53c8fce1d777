#include "magmadnn/compute/reduce.h"

#include "magmadnn/compute/grad_utils.h"

namespace magmadnn::op {

template <typename T>
ReduceNode<T>::ReduceNode(OpPtr<T> x, ReduceOp op, std::optional<std::int64_t> axis, bool keepdims)
    : Operation<T>("", {std::move(x)}), op_(op), axis_(axis), keepdims_(keepdims) {
  MAGMADNN_CHECK(op == ReduceOp::Sum || op == ReduceOp::Mean, NotSupportedError,
                 "op::ReduceNode: only sum and mean are differentiable reductions here");
  this->name_ = kind();
}

template <typename T>
Shape ReduceNode<T>::keepdims_shape(const Shape& x) const {
  if (!axis_) return Shape{1};
  std::vector<std::int64_t> d = x.dims();
  d[static_cast<std::size_t>(x.normalize_axis(*axis_))] = 1;
  return Shape(d);
}

template <typename T>
Shape ReduceNode<T>::infer_shape(const std::vector<Shape>& in) const {
  if (!axis_) return Shape{1};
  MAGMADNN_CHECK(*axis_ >= -in[0].ndim() && *axis_ < in[0].ndim(), ShapeError,
                 kind() << ": axis " << *axis_ << " is out of range for shape " << in[0]);
  if (keepdims_) return keepdims_shape(in[0]);
  std::vector<std::int64_t> d = in[0].dims();
  d.erase(d.begin() + in[0].normalize_axis(*axis_));
  return Shape(d);
}

template <typename T>
void ReduceNode<T>::forward() {
  const Tensor<T>& x = this->in(0);
  if (!axis_) {
    this->output_ = math::reduce(op_, x.view(Shape{x.size()}), 0, true);
  } else {
    this->output_ = math::reduce(op_, x, *axis_, keepdims_);
  }
}

template <typename T>
void ReduceNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  if (!needed[0]) return;
  const Shape& xs = this->in(0).shape();
  Tensor<T> dx = detail::expand_grad(g.view(keepdims_shape(xs)), xs);
  if (op_ == ReduceOp::Mean) {
    const std::int64_t n = axis_ ? xs[*axis_] : xs.numel();
    math::unary(UnaryOp::Scale, dx, dx, T(1) / static_cast<T>(n));
  }
  gin[0] = std::move(dx);
}

template <typename T>
ArgMaxNode<T>::ArgMaxNode(OpPtr<T> x, std::int64_t axis, bool keepdims)
    : Operation<T>("argmax", {std::move(x)}), axis_(axis), keepdims_(keepdims) {}

template <typename T>
Shape ArgMaxNode<T>::infer_shape(const std::vector<Shape>& in) const {
  MAGMADNN_CHECK(axis_ >= -in[0].ndim() && axis_ < in[0].ndim(), ShapeError,
                 "argmax: axis " << axis_ << " is out of range for shape " << in[0]);
  std::vector<std::int64_t> d = in[0].dims();
  const auto ax = static_cast<std::size_t>(in[0].normalize_axis(axis_));
  if (keepdims_) d[ax] = 1;
  else d.erase(d.begin() + static_cast<std::ptrdiff_t>(ax));
  return Shape(d);
}

template <typename T>
void ArgMaxNode<T>::forward() {
  const Tensor<T>& x = this->in(0);
  const Tensor<T> idx = math::argmax(x, axis_).template cast<T>();
  this->output_ = idx.view(infer_shape({x.shape()}));
}

template <typename T>
void ArgMaxNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  if (!needed[0]) return;
  Tensor<T> dx(this->in(0).shape(), g.get_memory_type(), g.get_device_id());
  math::fill(dx, T(0));
  gin[0] = std::move(dx);
}

template class ArgMaxNode<float>;
template class ArgMaxNode<double>;
template class ReduceNode<float>;
template class ReduceNode<double>;

}  // namespace magmadnn::op
