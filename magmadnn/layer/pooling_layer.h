/// @file pooling_layer.h
/// layer::PoolingLayer<T>: 2-D max or average pooling over each channel of
/// an NCHW input (compute/conv.h). No parameters; any batch size.
///
/// v1 factory arguments and defaults: filter {2, 2}, padding {0, 0},
/// strides {1, 1}, mode MAX_POOL (or AVERAGE_POOL), propagate_nan (accepted,
/// ignored). Average pooling divides by the number of valid (unpadded)
/// elements of each window.
#pragma once

#include "magmadnn/compute/conv.h"
#include "magmadnn/layer/conv2d_layer.h"
#include "magmadnn/layer/dims2.h"
#include "magmadnn/layer/layer.h"

namespace magmadnn::layer {

template <typename T>
class PoolingLayer : public Layer<T> {
 public:
  PoolingLayer(op::Expr<T> x, const conv::PoolParams& params, std::string name = "");
  std::string type_name() const override { return "Pooling2D"; }
  const conv::PoolParams& params() const noexcept { return params_; }

 private:
  conv::PoolParams params_;
};

/// PoolParams from v1's pairs (ValueError for a non-positive kernel or
/// stride, or a negative padding).
conv::PoolParams pool_geometry(const Dims2& filter_shape, const Dims2& padding, const Dims2& strides,
                               conv::PoolMode mode);

/// v1: `layer::pooling<T>(x, {2, 2}, {0, 0}, {2, 2}, AVERAGE_POOL)`.
template <typename T>
Ref<PoolingLayer<T>> pooling(const op::Expr<T>& x, Dims2 filter_shape = {2, 2}, Dims2 padding = {0, 0},
                             Dims2 strides = {1, 1}, conv::PoolMode mode = MAX_POOL, bool /*propagate_nan*/ = false) {
  return make_layer<PoolingLayer<T>>(x, pool_geometry(filter_shape, padding, strides, mode));
}
template <typename T>
Ref<PoolingLayer<T>> pooling(op::Operation<T>* x, Dims2 filter_shape = {2, 2}, Dims2 padding = {0, 0},
                             Dims2 strides = {1, 1}, conv::PoolMode mode = MAX_POOL, bool propagate_nan = false) {
  return pooling(op::Expr<T>(x), filter_shape, padding, strides, mode, propagate_nan);
}
/// v1: padding given as SAME or VALID.
template <typename T>
Ref<PoolingLayer<T>> pooling(const op::Expr<T>& x, Dims2 filter_shape, padding_t padding, Dims2 strides = {1, 1},
                             conv::PoolMode mode = MAX_POOL, bool propagate_nan = false) {
  return pooling(x, filter_shape, padding_for(padding, filter_shape, {1, 1}), strides, mode, propagate_nan);
}

}  // namespace magmadnn::layer
