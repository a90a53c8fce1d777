#include "magmadnn/parallel/layers/parallel_conv2d.h"

#include "magmadnn/parallel/model_parallel/root_rng.h"
#include "magmadnn/parallel/model_parallel/weight_group.h"

namespace magmadnn::layer {

template <typename T>
ParallelConv2DLayer<T>::ParallelConv2DLayer(op::Expr<T> x, Dims2 filter_shape, std::int64_t out_channels,
                                            const conv::ConvParams& geometry, distributed::mp::GroupPtr group,
                                            Options options, std::string name)
    : Layer<T>(std::move(name), std::move(x), "channel_parallel_conv2d"),
      group_(std::move(group)),
      out_channels_(out_channels),
      kernel_(filter_shape),
      geom_(geometry),
      gather_output_(options.gather_output) {
  const std::string what = "layer::channel_parallel_conv2d " + this->name_;
  MAGMADNN_CHECK(group_ != nullptr, ValueError, what << ": needs a communicator for its group");
  MAGMADNN_CHECK(this->input_, ValueError, what << ": empty input handle");
  const Shape in = this->known_input_shape();
  MAGMADNN_CHECK(in.ndim() == 4, ShapeError, what << ": input must be {N, C, H, W}, got " << in);
  MAGMADNN_CHECK(out_channels_ > 0 && kernel_.h > 0 && kernel_.w > 0, ValueError,
                 what << ": out_channels " << out_channels_ << " and filter " << kernel_.h << "x" << kernel_.w
                      << " must be positive");
  MAGMADNN_CHECK(geom_.groups == 1, ValueError,
                 what << ": grouped convolution (groups = " << geom_.groups << ") cannot be split by output channel");
  const int p = group_->size();
  MAGMADNN_CHECK(out_channels_ >= p, ShapeError,
                 what << ": " << out_channels_ << " output channels cannot be split over a group of " << p
                      << " ranks (each needs at least one filter)");
  in_channels_ = in[1];
  shard_ = shard_of(out_channels_, p, group_->rank());

  distributed::mp::adopt_root_rng(*group_);
  const memory_t mem = this->input_memory();
  {
    // The whole initial W (then b), drawn as Conv2dLayer draws them, lives
    // only for this block: the layer keeps its filters.
    const Tensor<T> full(full_filter_shape(), options.filter_init, mem);
    filter_ = this->add_weight("W", Shape{shard_.extent, in_channels_, kernel_.h, kernel_.w}, {NONE});
    filter_->value().copy_from(full.slice(shard_.offset, shard_.offset + shard_.extent));
  }
  if (options.use_bias) {
    const Tensor<T> full(Shape{out_channels_}, options.bias_init, mem);
    bias_ = this->add_weight("b", Shape{shard_.extent}, {NONE});
    bias_->value().copy_from(full.slice(shard_.offset, shard_.offset + shard_.extent));
  }
  this->set_output(distributed::mp::channel_parallel_conv2d<T>(this->input_, filter_, bias_, group_, out_channels_,
                                                               geom_, gather_output_, options.algo));
}

template <typename T>
std::optional<Sharding> ParallelConv2DLayer<T>::sharding() const {
  Sharding s{distributed::mp::weight_group(group_), "Conv2D", {{full_filter_shape(), 0, shard_}}};
  if (bias_) s.weights.push_back({Shape{out_channels_}, 0, shard_});
  return s;
}

template class ParallelConv2DLayer<float>;
template class ParallelConv2DLayer<double>;

}  // namespace magmadnn::layer
