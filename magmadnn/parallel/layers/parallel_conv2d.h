/// @file parallel_conv2d.h
/// layer::ParallelConv2DLayer<T>: a 2-D convolution whose filters are split
/// over a model-parallel group of P ranks by output channel, so each rank
/// stores and updates 1/P of them (within one filter when P does not divide
/// the channel count). The convolutional form of the column-parallel fully
/// connected layer (parallel_fully_connected.h).
///
/// Rank r holds output channels shard_of(K, P, r): those filters of W
/// {K, C, kh, kw} and those entries of b. The input is whole on every rank;
/// the output is this rank's channels, or all of them with gather_output
/// (the default, so the layer drops into a network in place of a Conv2D:
/// pooling, activations and dense layers after it see every channel).
///
///   auto c1 = layer::channel_parallel_conv2d<float>(x, {5, 5}, 6, group, {2, 2});   // {N, 6, 28, 28}
///   auto a1 = layer::activation<float>(c1->out(), layer::RELU);
///
/// The op and its autodiff are model_parallel/parallel_conv.h's; the local
/// convolution is the single-process conv2d op, so every algorithm and the
/// chooser apply to the slice.
///
/// Initialization equals the single-process Conv2D layer's: the generator
/// state is taken from rank 0 (a broadcast), every rank draws the whole W
/// (and b) exactly as Conv2dLayer would (same stream, same fans: fan_in =
/// C * kh * kw, fan_out = K * kh * kw), keeps its filters and frees the
/// rest. So a P-rank network and a one-process network built in the same
/// order start from the same weights.
///
/// Requires: a 4-D input {N, C, H, W} whose shape is known when the layer is
/// built; K >= P (ShapeError otherwise); groups == 1; every rank of `group`
/// builds the same layers in the same order (construction broadcasts the
/// generator state). Guarantees: get_filter() holds only this rank's filters
/// {shard of K, C, kh, kw}; full_filter_shape() is the whole W.
#pragma once

#include <cstdint>

#include "magmadnn/parallel/model_parallel/parallel_conv.h"
#include "magmadnn/layer/conv2d_layer.h"

namespace magmadnn::layer {

template <typename T>
class ParallelConv2DLayer : public Layer<T> {
 public:
  struct Options {
    bool use_bias = false;
    tensor_filler_t<T> filter_init{GLOROT};
    tensor_filler_t<T> bias_init{ZERO};
    /// Allgather the output channels so the next layer sees all of them.
    bool gather_output = true;
    conv::Algo algo = conv::Algo::Auto;
  };

  ParallelConv2DLayer(op::Expr<T> x, Dims2 filter_shape, std::int64_t out_channels, const conv::ConvParams& geometry,
                      distributed::mp::GroupPtr group, Options options, std::string name = "");

  std::string type_name() const override { return "ChannelParallelConv2D"; }
  /// Filters and bias cut along axis 0 (output channels). Stands for a Conv2D.
  std::optional<Sharding> sharding() const override;
  /// The whole layer's output channel count K (not this rank's share).
  std::int64_t out_channels() const noexcept { return out_channels_; }
  /// The whole W: {K, C, kh, kw}.
  Shape full_filter_shape() const { return Shape{out_channels_, in_channels_, kernel_.h, kernel_.w}; }
  /// The output channels (filters) this rank holds.
  Shard channel_shard() const noexcept { return shard_; }
  distributed::Communicator& group() const noexcept { return *group_; }
  bool gathers_output() const noexcept { return gather_output_; }
  const conv::ConvParams& geometry() const noexcept { return geom_; }
  /// This rank's filters {shard of K, C, kh, kw}.
  const op::Var<T>& get_filter() const noexcept { return filter_; }
  /// This rank's entries of b; empty without a bias.
  const op::Var<T>& get_bias() const noexcept { return bias_; }

 private:
  distributed::mp::GroupPtr group_;
  std::int64_t out_channels_ = 0, in_channels_ = 0;
  Dims2 kernel_;
  conv::ConvParams geom_;
  bool gather_output_ = true;
  Shard shard_;
  op::Var<T> filter_, bias_;
};

/// layer::conv2d's parameters (less use_cross_correlation, which is always
/// true), with the group after the channel count and gather_output after the
/// geometry.
template <typename T>
Ref<ParallelConv2DLayer<T>> channel_parallel_conv2d(const op::Expr<T>& x, Dims2 filter_shape,
                                                    std::int64_t out_channels, distributed::mp::GroupPtr group,
                                                    Dims2 padding = {0, 0}, Dims2 strides = {1, 1},
                                                    Dims2 dilation_rates = {1, 1}, bool gather_output = true,
                                                    bool use_bias = false,
                                                    const tensor_filler_t<T>& filter_initializer = {GLOROT},
                                                    const tensor_filler_t<T>& bias_initializer = {ZERO}) {
  typename ParallelConv2DLayer<T>::Options o;
  o.use_bias = use_bias, o.filter_init = filter_initializer, o.bias_init = bias_initializer;
  o.gather_output = gather_output;
  return make_layer<ParallelConv2DLayer<T>>(x, filter_shape, out_channels,
                                            conv_geometry(padding, strides, dilation_rates), std::move(group), o);
}

}  // namespace magmadnn::layer
