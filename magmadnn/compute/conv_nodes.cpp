#include "magmadnn/compute/conv.h"

#include <type_traits>

#include "magmadnn/compute/autocast.h"
#include "magmadnn/conv/chooser.h"
#include "magmadnn/conv/conv.h"
#include "magmadnn/conv/conv_mixed.h"
#include "magmadnn/conv/layout.h"
#include "magmadnn/conv/pool_blocked.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::op {

template <typename T>
Conv2dNode<T>::Conv2dNode(OpPtr<T> x, OpPtr<T> w, OpPtr<T> b, const conv::ConvParams& params, conv::Algo algo,
                          bool relu)
    : Operation<T>(relu ? "conv2d_relu" : "conv2d", b ? std::vector<OpPtr<T>>{std::move(x), std::move(w), std::move(b)}
                               : std::vector<OpPtr<T>>{std::move(x), std::move(w)}),
      params_(params),
      algo_(algo),
      relu_(relu) {}

template <typename T>
Shape Conv2dNode<T>::infer_shape(const std::vector<Shape>& in) const {
  const conv::ConvProblem pr = conv::make_problem(in[0], in[1], params_);
  if (in.size() > 2) {
    MAGMADNN_CHECK(in[2] == Shape{pr.k}, ShapeError,
                   "conv2d: bias " << in[2] << " must be {" << pr.k << "} for filters " << in[1]);
  }
  return pr.y_shape();
}

namespace {
// Whether a float node takes autocast's low-precision convolution for `pass`
// now: Conv computes in bf16 or f16 under the run's precision, and that pays
// for this problem where x lives (conv_mixed.h's policy). The element type
// then comes from autocast::with_low_precision. `blocks`: the layouts the
// pass would run in (NCHW or channels last), which it is timed in.
template <typename T>
bool low_precision_conv(const Tensor<T>& x, const Shape& w, const conv::ConvParams& params, conv::Pass pass,
                        conv::Blocks blocks) {
  if constexpr (std::is_same_v<T, float>) {
    const dtype low = autocast::compute_dtype(autocast::OpKind::Conv, autocast::current());
    if (low == dtype::f32) return false;
    conv::ConvProblem prob = conv::make_problem(x.shape(), w, params);
    prob.x_block = blocks.x, prob.y_block = blocks.y;
    return conv::mixed_conv_pays(prob, pass, low, x.on_device(), x.get_device_id());
  } else {
    return false;
  }
}

// Layouts autocast's convolutions read and write: NCHW, or channels last.
bool low_precision_layouts(conv::Blocks b) {
  return (b.x == 0 || b.x == conv::kChannelsLast) && (b.y == 0 || b.y == conv::kChannelsLast);
}
}  // namespace

template <typename T>
bool Conv2dNode<T>::blocked_possible() const {
  if constexpr (std::is_same_v<T, float>) {
    const conv::Algo forced = algo_ != conv::Algo::Auto ? algo_ : conv::forced_algorithm();
    return (forced == conv::Algo::Auto || forced == conv::Algo::OneDNN) &&
           conv::find_algorithm<float>(conv::Algo::OneDNN, DeviceKind::CPU) != nullptr;
  } else {
    return false;
  }
}

template <typename T>
void Conv2dNode<T>::forward() {
  const bool has_bias = this->inputs_.size() > 2;
  const int producer_block = output_block_of(*this->inputs_[0]);
  const Tensor<T>* x = &this->in(0);
  const bool possible = blocked_possible();
  x_block_ = producer_block;
  if constexpr (std::is_same_v<T, float>) {
    if (producer_block != 0 && !possible) {
      x = &in_layout(*x, producer_block, 0, x_plain_);
      x_block_ = 0;
    }
    // Autocast keeps layouts NCHW or channels last (blocked_output.h); the
    // low-precision copy of x is cast from in(0), so x must not be converted.
    const Shape ys = conv::make_problem(x->shape(), this->in(1).shape(), params_).y_shape();
    const conv::Blocks low{x_block_, this->output_block_for(ys, *x, possible)};
    if (x_block_ == producer_block && low_precision_layouts(low) &&
        low_precision_conv(*x, this->in(1).shape(), params_, conv::Pass::Forward, low)) {
      this->block_ = low.y;
      autocast::with_low_precision(autocast::OpKind::Conv, [&](auto l) {
        using L = decltype(l);
        this->output_ =
            conv::conv2d_forward_mixed(this->inputs_[0]->template low_output<L>(),
                                       this->inputs_[1]->template low_output<L>(), has_bias ? &this->in(2) : nullptr,
                                       params_, low);
      });
      if (relu_) math::unary(UnaryOp::Relu, this->output_, this->output_);
      return;
    }
  }
  const Shape y_shape = conv::make_problem(x->shape(), this->in(1).shape(), params_).y_shape();
  this->block_ = this->output_block_for(y_shape, *x, possible);
  this->output_ = conv::conv2d_forward(*x, this->in(1), has_bias ? &this->in(2) : nullptr, params_, algo_, relu_,
                                       training_, {x_block_, this->block_});
}

template <typename T>
void Conv2dNode<T>::backward(const Tensor<T>& g_out, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  // A fused ReLU passes the gradient where its output is positive; the
  // convolution's passes then run on that masked gradient. (Elementwise, so
  // in the output's layout, which g_out shares.)
  Tensor<T> masked;
  if (relu_) {
    masked = Tensor<T>(g_out.shape(), g_out.get_memory_type(), g_out.get_device_id());
    math::unary_backward(UnaryOp::Relu, this->output_, this->output_, g_out, masked);
  }
  const Tensor<T>& g = relu_ ? masked : g_out;
  // x as the forward pass convolved it; dx goes back in the producer's layout.
  const int producer_block = output_block_of(*this->inputs_[0]);
  const bool converted = producer_block != x_block_;
  const Tensor<T>& x = converted ? x_plain_ : this->in(0);
  const Tensor<T>& w = this->in(1);
  const bool has_bias = this->inputs_.size() > 2;
  const bool want_db = has_bias && needed[2];
  const conv::Blocks blocks{x_block_, this->block_};
  bool data_low = false, filter_low = false;
  if constexpr (std::is_same_v<T, float>) {
    const bool low = !converted && low_precision_layouts(blocks);
    data_low = low && needed[0] && low_precision_conv(x, w.shape(), params_, conv::Pass::BackwardData, blocks);
    filter_low = low && (needed[1] || want_db) &&
                 low_precision_conv(x, w.shape(), params_, conv::Pass::BackwardFilter, blocks);
    if (data_low || filter_low) {
      autocast::with_low_precision(autocast::OpKind::Conv, [&](auto l) {
        using L = decltype(l);
        // x and w as cast for forward (cached on their nodes); g cast once here.
        const Tensor<L> g16 = g.template cast<L>();
        autocast::count_cast();
        if (data_low) {
          gin[0] = conv::conv2d_backward_data_mixed(g16, this->inputs_[1]->template low_output<L>(), x.shape(),
                                                    params_, blocks);
        }
        if (filter_low) {
          Tensor<float> db;
          Tensor<float> dw = conv::conv2d_backward_filter_mixed(this->inputs_[0]->template low_output<L>(), g16,
                                                                w.shape(), params_, want_db ? &db : nullptr, blocks);
          if (needed[1]) gin[1] = std::move(dw);
          if (want_db) gin[2] = std::move(db);
        }
      });
    }
  }
  if (needed[0] && !data_low) {
    Tensor<T> dx = conv::conv2d_backward_data(g, w, x.shape(), params_, algo_, blocks);
    if (converted) {
      Tensor<T> back;
      (void)in_layout(dx, x_block_, producer_block, back);
      dx = std::move(back);
    }
    gin[0] = std::move(dx);
  }
  if ((needed[1] || want_db) && !filter_low) {
    // A first layer's filter pass (x NCHW with few channels, dy blocked) is
    // timed between oneDNN, which pads x's channels to a whole block, and
    // the sliding kernel, which reads the blocked dy as it is.
    Tensor<T> db;
    Tensor<T> dw = conv::conv2d_backward_filter(x, g, w.shape(), params_, algo_, want_db ? &db : nullptr, blocks);
    if (needed[1]) gin[1] = std::move(dw);
    if (want_db) gin[2] = std::move(db);
  }
}

template <typename T>
PoolingNode<T>::PoolingNode(OpPtr<T> x, const conv::PoolParams& params)
    : Operation<T>("pooling", {std::move(x)}), params_(params) {}

template <typename T>
Shape PoolingNode<T>::infer_shape(const std::vector<Shape>& in) const {
  return conv::pool_output_shape(in[0], params_);
}

template <typename T>
void PoolingNode<T>::forward() {
  // A blocked x comes only from a producer that keep_blocked_layouts let
  // keep the layout, which it does for the poolings that read it: a global
  // average (its output is NCHW in any layout) and a max pooling the
  // blocked kernel takes (its output keeps x's layout where allowed).
  x_block_ = output_block_of(*this->inputs_[0]);
  this->block_ = 0;
  if constexpr (std::is_same_v<T, float>) {
    if (x_block_ != 0) {
      const Shape& xs = this->in(0).shape();
      if (conv::is_global_average(xs, params_)) {
        this->output_ = conv::global_average_pool_blocked(this->in(0), x_block_);
        return;
      }
      MAGMADNN_CHECK(conv::max_pool_blocked_supports(xs, params_, x_block_), Error,
                     "pooling: a blocked input " << xs << " reached a pooling that cannot read it");
      Tensor<T> y = conv::max_pool_blocked(this->in(0), params_, x_block_, &argmax_);
      if (this->output_block_for(y.shape(), y) == x_block_) {
        this->block_ = x_block_;
        this->output_ = std::move(y);
      } else {
        Tensor<T> plain;
        (void)in_layout(y, x_block_, 0, plain);
        this->output_ = std::move(plain);
      }
      return;
    }
  }
  this->output_ = conv::pool2d_forward(this->in(0), params_, &argmax_);
}

template <typename T>
void PoolingNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  if (!needed[0]) return;
  if constexpr (std::is_same_v<T, float>) {
    if (x_block_ != 0) {  // d(input) in the input's layout
      const Shape& xs = this->in(0).shape();
      if (conv::is_global_average(xs, params_)) {
        gin[0] = conv::global_average_pool_blocked_backward(g, xs, x_block_);
        return;
      }
      const Tensor<T>& gb = in_layout(g, this->block_, x_block_, g_blocked_);
      gin[0] = conv::max_pool_blocked_backward(gb, argmax_, xs, params_, x_block_);
      return;
    }
  }
  gin[0] = conv::pool2d_backward(this->in(0), g, params_, params_.mode == conv::PoolMode::Max ? &argmax_ : nullptr);
}

template class Conv2dNode<float>;
template class Conv2dNode<double>;
template class PoolingNode<float>;
template class PoolingNode<double>;

}  // namespace magmadnn::op
