#include "magmadnn/compute/linalg.h"

#include "magmadnn/tensor/math.h"

namespace magmadnn::op {

template <typename T>
TransposeNode<T>::TransposeNode(OpPtr<T> x) : Operation<T>("transpose", {std::move(x)}) {}

template <typename T>
Shape TransposeNode<T>::infer_shape(const std::vector<Shape>& in) const {
  MAGMADNN_CHECK(in[0].ndim() >= 2, ShapeError, "transpose: needs at least 2 axes, got " << in[0]);
  std::vector<std::int64_t> d = in[0].dims();
  std::swap(d[d.size() - 1], d[d.size() - 2]);
  return Shape(d);
}

template <typename T>
void TransposeNode<T>::forward() {
  // Written into output_buffer (not a fresh math::transpose result) so that a
  // re-evaluation reuses the buffer and a buffer pool can lend it.
  const Tensor<T>& x = this->in(0);
  std::vector<int> perm(static_cast<std::size_t>(x.ndim()));
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int>(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  math::permute(x, perm, this->output_buffer(infer_shape({x.shape()}), x));
}

template <typename T>
void TransposeNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  if (needed[0]) gin[0] = math::transpose(g);
}

template class TransposeNode<float>;
template class TransposeNode<double>;

}  // namespace magmadnn::op
