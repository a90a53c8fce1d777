#include "magmadnn/layer/pooling_layer.h"

namespace magmadnn::layer {

conv::PoolParams pool_geometry(const Dims2& filter_shape, const Dims2& padding, const Dims2& strides,
                               conv::PoolMode mode) {
  conv::PoolParams p;
  p.kernel_h = filter_shape.h, p.kernel_w = filter_shape.w;
  p.pad_h = padding.h, p.pad_w = padding.w;
  p.stride_h = strides.h, p.stride_w = strides.w;
  p.mode = mode;
  MAGMADNN_CHECK(p.kernel_h > 0 && p.kernel_w > 0 && p.stride_h > 0 && p.stride_w > 0 && p.pad_h >= 0 && p.pad_w >= 0,
                 ValueError,
                 "layer::pooling: filter " << p.kernel_h << "x" << p.kernel_w << " and strides (" << p.stride_h << ", "
                                           << p.stride_w << ") must be positive, padding (" << p.pad_h << ", "
                                           << p.pad_w << ") non-negative");
  return p;
}

template <typename T>
PoolingLayer<T>::PoolingLayer(op::Expr<T> x, const conv::PoolParams& params, std::string name)
    : Layer<T>(std::move(name), std::move(x), "pooling"), params_(params) {
  MAGMADNN_CHECK(this->input_, ValueError, "layer::pooling: empty input handle");
  this->set_output(op::pooling(this->input_, params_));
}

template class PoolingLayer<float>;
template class PoolingLayer<double>;

}  // namespace magmadnn::layer
