#include "magmadnn/compute/activation.h"

#include "magmadnn/tensor/math.h"

namespace magmadnn::op {

template <typename T>
SoftmaxNode<T>::SoftmaxNode(OpPtr<T> x, bool log) : Operation<T>("", {std::move(x)}), log_(log) {
  this->name_ = kind();
}

template <typename T>
Shape SoftmaxNode<T>::infer_shape(const std::vector<Shape>& in) const {
  MAGMADNN_CHECK(in[0].ndim() >= 1, ShapeError, kind() << ": needs at least one axis, got " << in[0]);
  return in[0];
}

template <typename T>
void SoftmaxNode<T>::forward() {
  Tensor<T>& out = this->output_buffer(this->in(0).shape(), this->in(0));
  math::softmax(this->in(0), out, log_);
}

template <typename T>
void SoftmaxNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  if (!needed[0]) return;
  Tensor<T> dx(g.shape(), g.get_memory_type(), g.get_device_id());
  math::softmax_backward(this->output_, g, dx, log_);
  gin[0] = std::move(dx);
}

template class SoftmaxNode<float>;
template class SoftmaxNode<double>;

}  // namespace magmadnn::op
