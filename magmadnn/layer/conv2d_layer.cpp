#include "magmadnn/layer/conv2d_layer.h"

namespace magmadnn::layer {

conv::ConvParams conv_geometry(const Dims2& padding, const Dims2& strides, const Dims2& dilation_rates) {
  conv::ConvParams p;
  p.pad_h = padding.h, p.pad_w = padding.w;
  p.stride_h = strides.h, p.stride_w = strides.w;
  p.dilation_h = dilation_rates.h, p.dilation_w = dilation_rates.w;
  MAGMADNN_CHECK(p.pad_h >= 0 && p.pad_w >= 0 && p.stride_h > 0 && p.stride_w > 0 && p.dilation_h > 0 &&
                     p.dilation_w > 0,
                 ValueError,
                 "layer::conv2d: padding (" << p.pad_h << ", " << p.pad_w << ") must be >= 0, strides ("
                                            << p.stride_h << ", " << p.stride_w << ") and dilation ("
                                            << p.dilation_h << ", " << p.dilation_w << ") > 0");
  return p;
}

Dims2 padding_for(padding_t padding, const Dims2& filter_shape, const Dims2& dilation_rates) {
  if (padding == VALID) return {0, 0};
  const std::int64_t eh = dilation_rates.h * (filter_shape.h - 1), ew = dilation_rates.w * (filter_shape.w - 1);
  MAGMADNN_CHECK(eh % 2 == 0 && ew % 2 == 0, ValueError,
                 "layer::conv2d: SAME padding needs an odd (dilated) kernel, got " << filter_shape.h << "x"
                                                                                   << filter_shape.w);
  return {eh / 2, ew / 2};
}

template <typename T>
Conv2dLayer<T>::Conv2dLayer(op::Expr<T> x, Dims2 filter_shape, std::int64_t out_channels,
                            const conv::ConvParams& geometry, bool use_bias,
                            const tensor_filler_t<T>& filter_initializer, const tensor_filler_t<T>& bias_initializer,
                            conv::Algo algo, std::string name)
    : Layer<T>(std::move(name), std::move(x), "conv2d"), geom_(geometry) {
  const Shape in = this->known_input_shape();
  MAGMADNN_CHECK(in.ndim() == 4, ShapeError, "layer::conv2d " << this->name_ << ": input must be {N, C, H, W}, got "
                                                              << in);
  MAGMADNN_CHECK(out_channels > 0 && filter_shape.h > 0 && filter_shape.w > 0, ValueError,
                 "layer::conv2d " << this->name_ << ": out_channels " << out_channels << " and filter "
                                  << filter_shape.h << "x" << filter_shape.w << " must be positive");
  MAGMADNN_CHECK(geom_.groups > 0 && in[1] % geom_.groups == 0 && out_channels % geom_.groups == 0, ShapeError,
                 "layer::conv2d " << this->name_ << ": " << geom_.groups << " groups must divide the input channels "
                                  << in[1] << " and the output channels " << out_channels);
  filter_ = this->add_weight("W", Shape{out_channels, in[1] / geom_.groups, filter_shape.h, filter_shape.w},
                             filter_initializer);
  if (use_bias) bias_ = this->add_weight("b", Shape{out_channels}, bias_initializer);
  build(algo);
}

template <typename T>
Conv2dLayer<T>::Conv2dLayer(op::Expr<T> x, op::Var<T> filter, op::Var<T> bias, const conv::ConvParams& geometry,
                            conv::Algo algo, std::string name)
    : Layer<T>(std::move(name), std::move(x), "conv2d"),
      filter_(std::move(filter)),
      bias_(std::move(bias)),
      geom_(geometry) {
  MAGMADNN_CHECK(filter_, ValueError, "layer::conv2d " << this->name_ << ": empty filter handle");
  this->add_weight("W", filter_);
  if (bias_) this->add_weight("b", bias_);
  build(algo);
}

template <typename T>
void Conv2dLayer<T>::build(conv::Algo algo) {
  MAGMADNN_CHECK(this->input_, ValueError, "layer::conv2d " << this->name_ << ": empty input handle");
  this->set_output(bias_ ? op::conv2d(this->input_, filter_, bias_, geom_, algo)
                         : op::conv2d(this->input_, filter_, geom_, algo));
}

template class Conv2dLayer<float>;
template class Conv2dLayer<double>;

}  // namespace magmadnn::layer
