/// @file conv2d_layer.h
/// layer::Conv2dLayer<T>: 2-D convolution (cross-correlation, NCHW) through
/// the convolution engine (compute/conv.h, algorithms chosen per shape).
///
/// Requires a 4-D input {N, C, H, W} whose channel count is known when the
/// layer is built. Guarantees a filter of shape {out_channels, C / groups,
/// kh, kw} and, with a bias, b of shape {out_channels} (one per output
/// channel); the output is {N, out_channels, P, Q} for any batch size.
///
/// Initialization: filter from `filter_initializer` (default Glorot uniform
/// with fans from the filter layout, i.e. fan_in = C * kh * kw; pass
/// layer::init_for<T>(layer::RELU) or {HE} for He normal), bias from
/// `bias_initializer` (default zero). MagmaDNN v1's factory arguments are
/// kept in order; `use_cross_correlation = false` (a true convolution) is
/// accepted, since a learned filter absorbs the flip: it is the same model
/// with the filter stored mirrored.
#pragma once

#include "magmadnn/compute/conv.h"
#include "magmadnn/layer/dims2.h"
#include "magmadnn/layer/layer.h"

namespace magmadnn::layer {

/// v1: SAME pads so that a stride-1 convolution keeps H and W (kernel
/// sizes must then be odd); VALID pads nothing.
enum padding_t { SAME, VALID };

template <typename T>
class Conv2dLayer : public Layer<T> {
 public:
  Conv2dLayer(op::Expr<T> x, Dims2 filter_shape, std::int64_t out_channels, const conv::ConvParams& geometry,
              bool use_bias = false, const tensor_filler_t<T>& filter_initializer = {GLOROT},
              const tensor_filler_t<T>& bias_initializer = {ZERO}, conv::Algo algo = conv::Algo::Auto,
              std::string name = "");
  /// With given parameters: filter {K, C / groups, kh, kw}, bias {K} or empty.
  Conv2dLayer(op::Expr<T> x, op::Var<T> filter, op::Var<T> bias, const conv::ConvParams& geometry,
              conv::Algo algo = conv::Algo::Auto, std::string name = "");

  std::string type_name() const override { return "Conv2D"; }
  const op::Var<T>& get_filter() const noexcept { return filter_; }
  /// Empty handle without a bias.
  const op::Var<T>& get_bias() const noexcept { return bias_; }
  const conv::ConvParams& geometry() const noexcept { return geom_; }

 private:
  void build(conv::Algo algo);

  op::Var<T> filter_, bias_;
  conv::ConvParams geom_;
};

/// ConvParams from v1's padding, strides and dilation pairs.
conv::ConvParams conv_geometry(const Dims2& padding, const Dims2& strides, const Dims2& dilation_rates);
/// SAME / VALID padding for a kernel and dilation (ValueError for SAME with
/// an even effective kernel, which cannot be padded symmetrically).
Dims2 padding_for(padding_t padding, const Dims2& filter_shape, const Dims2& dilation_rates);

/// v1: `layer::conv2d<T>(x, {5, 5}, 32, {0, 0}, {1, 1}, {1, 1})`.
template <typename T>
Ref<Conv2dLayer<T>> conv2d(const op::Expr<T>& x, Dims2 filter_shape = {3, 3}, std::int64_t out_channels = 1,
                           Dims2 padding = {0, 0}, Dims2 strides = {1, 1}, Dims2 dilation_rates = {1, 1},
                           bool use_cross_correlation = true, bool use_bias = false,
                           const tensor_filler_t<T>& filter_initializer = {GLOROT},
                           const tensor_filler_t<T>& bias_initializer = {ZERO}) {
  (void)use_cross_correlation;  // see the file comment
  return make_layer<Conv2dLayer<T>>(x, filter_shape, out_channels, conv_geometry(padding, strides, dilation_rates),
                                    use_bias, filter_initializer, bias_initializer);
}
template <typename T>
Ref<Conv2dLayer<T>> conv2d(op::Operation<T>* x, Dims2 filter_shape = {3, 3}, std::int64_t out_channels = 1,
                           Dims2 padding = {0, 0}, Dims2 strides = {1, 1}, Dims2 dilation_rates = {1, 1},
                           bool use_cross_correlation = true, bool use_bias = false,
                           const tensor_filler_t<T>& filter_initializer = {GLOROT},
                           const tensor_filler_t<T>& bias_initializer = {ZERO}) {
  return conv2d(op::Expr<T>(x), filter_shape, out_channels, padding, strides, dilation_rates, use_cross_correlation,
                use_bias, filter_initializer, bias_initializer);
}
/// v1: padding given as SAME or VALID.
template <typename T>
Ref<Conv2dLayer<T>> conv2d(const op::Expr<T>& x, Dims2 filter_shape, std::int64_t out_channels, padding_t padding,
                           Dims2 strides = {1, 1}, Dims2 dilation_rates = {1, 1}, bool use_cross_correlation = true,
                           bool use_bias = false, const tensor_filler_t<T>& filter_initializer = {GLOROT},
                           const tensor_filler_t<T>& bias_initializer = {ZERO}) {
  return conv2d(x, filter_shape, out_channels, padding_for(padding, filter_shape, dilation_rates), strides,
                dilation_rates, use_cross_correlation, use_bias, filter_initializer, bias_initializer);
}

}  // namespace magmadnn::layer
