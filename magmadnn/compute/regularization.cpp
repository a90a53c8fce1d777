#include "magmadnn/compute/regularization.h"

#include "magmadnn/compute/grad_utils.h"
#include "magmadnn/tensor/math_blocked.h"

namespace magmadnn::op {

// -- DropoutNode -------------------------------------------------------------------------------
template <typename T>
DropoutNode<T>::DropoutNode(OpPtr<T> x, T keep_prob) : Operation<T>("dropout", {std::move(x)}), keep_(keep_prob) {
  MAGMADNN_CHECK(keep_prob > T(0) && keep_prob <= T(1), ValueError,
                 "dropout: keep probability must be in (0, 1], got " << keep_prob);
}

template <typename T>
void DropoutNode<T>::set_training(bool training) {
  if (training != training_) this->invalidate();
  training_ = training;
}

template <typename T>
void DropoutNode<T>::forward() {
  const Tensor<T>& x = this->in(0);
  if (!training_) {
    mask_ = Tensor<T>();
    this->output_buffer(x.shape(), x).copy_from(x);
    return;
  }
  // MASK draws from the global Philox seed, a fresh stream per fill.
  mask_ = Tensor<T>(x.shape(), tensor_filler_t<T>(MASK, std::vector<T>{keep_}), x.get_memory_type(),
                    x.get_device_id());
  math::unary(UnaryOp::Scale, mask_, mask_, T(1) / keep_);
  math::product(x, mask_, this->output_buffer(x.shape(), x));
}

template <typename T>
void DropoutNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  if (!needed[0]) return;
  gin[0] = training_ ? math::product(g, mask_) : Tensor<T>(g);
}

// -- BatchNormNode --------------------------------------------------------------------------------
template <typename T>
BatchNormNode<T>::BatchNormNode(Key, std::vector<OpPtr<T>> inputs, T momentum, T eps, bool relu,
                                std::shared_ptr<RunningStats> stats)
    : Operation<T>("batchnorm", std::move(inputs)),
      momentum_(momentum),
      eps_(eps),
      relu_(relu),
      stats_(std::move(stats)) {}

template <typename T>
BatchNormNode<T>::BatchNormNode(OpPtr<T> x, OpPtr<T> gamma, OpPtr<T> beta, T momentum, T eps)
    : BatchNormNode(Key{}, {std::move(x), std::move(gamma), std::move(beta)}, momentum, eps, false,
                    std::make_shared<RunningStats>()) {}

template <typename T>
std::shared_ptr<BatchNormNode<T>> BatchNormNode<T>::fused(const BatchNormNode& base, OpPtr<T> skip, bool relu) {
  MAGMADNN_CHECK(!base.relu_ && !(skip && base.has_skip()), ValueError,
                 "batchnorm: node " << base.get_name() << " (" << base.kind() << ") already has what fused() adds");
  std::vector<OpPtr<T>> ins = base.inputs_;  // with base's residual input, if it has one
  if (skip) ins.push_back(std::move(skip));
  auto n = std::make_shared<BatchNormNode>(Key{}, std::move(ins), base.momentum_, base.eps_, relu, base.stats_);
  n->training_ = base.training_;
  return n;
}

template <typename T>
std::string BatchNormNode<T>::kind() const {
  return std::string("batchnorm") + (has_skip() ? "_add" : "") + (relu_ ? "_relu" : "");
}

template <typename T>
void BatchNormNode<T>::set_training(bool training) {
  if (training != training_) this->invalidate();
  training_ = training;
}

template <typename T>
Shape BatchNormNode<T>::infer_shape(const std::vector<Shape>& in) const {
  MAGMADNN_CHECK(in[0].ndim() >= 2, ShapeError, "batchnorm: needs {N, C, ...}, got " << in[0]);
  const std::int64_t c = in[0][1];
  MAGMADNN_CHECK(in[1].numel() == c && in[2].numel() == c, ShapeError,
                 "batchnorm: gamma " << in[1] << " and beta " << in[2] << " must have " << c << " elements for input "
                                     << in[0]);
  MAGMADNN_CHECK(in.size() < 4 || in[3] == in[0], ShapeError,
                 "batchnorm: the residual input " << in[3] << " must have the normalised input's shape " << in[0]);
  return in[0];
}

template <typename T>
void BatchNormNode<T>::forward() {
  const Tensor<T>& x = this->in(0);
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < this->inputs_.size(); ++i) shapes.push_back(this->in(i).shape());
  infer_shape(shapes);
  const std::int64_t c = x.shape()[1];
  const Shape per_channel{c};
  if (stats_->mean.shape() != per_channel) {
    stats_->mean = detail::full_like(per_channel, T(0), x);
    stats_->var = detail::full_like(per_channel, T(1), x);
  }
  for (Tensor<T>* t : {&mean_, &var_, &invstd_}) {
    if (t->shape() != per_channel || t->get_memory_type() != x.get_memory_type() ||
        t->get_device_id() != x.get_device_id()) {
      *t = Tensor<T>(per_channel, x.get_memory_type(), x.get_device_id());
    }
  }
  // Computed in the output's layout; x and skip are reordered into it
  // when they come in another (x's copy is kept for the backward pass).
  this->block_ = this->output_block_for(x.shape(), x);
  const Tensor<T>& xs = in_layout(x, output_block_of(*this->inputs_[0]), this->block_, x_in_);
  const Tensor<T>* skip =
      has_skip() ? &in_layout(this->in(3), output_block_of(*this->inputs_[3]), this->block_, skip_in_) : nullptr;
  Tensor<T>& y = this->output_buffer(x.shape(), x);
  if (training_) {
    math::batchnorm_forward_blocked<T>(this->block_, xs, this->in(1), this->in(2), skip, relu_, eps_, nullptr,
                                       nullptr, y, mean_, var_, invstd_);
    // running = (1 - m) running + m batch (unbiased variance, as PyTorch)
    const T n = static_cast<T>(x.size() / std::max<std::int64_t>(1, c));
    math::axpby(momentum_, mean_, T(1) - momentum_, stats_->mean);
    math::axpby(momentum_ * n / std::max(T(1), n - T(1)), var_, T(1) - momentum_, stats_->var);
  } else {
    math::batchnorm_forward_blocked(this->block_, xs, this->in(1), this->in(2), skip, relu_, eps_, &stats_->mean,
                                    &stats_->var, y, mean_, var_, invstd_);
  }
}

template <typename T>
void BatchNormNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  // g, the output and the sums are in the output's layout (block_); dx and
  // dskip go back in the layouts x and skip came in.
  const int bx = output_block_of(*this->inputs_[0]);
  const int bs = has_skip() ? output_block_of(*this->inputs_[3]) : 0;
  const Tensor<T>& x = bx == this->block_ ? this->in(0) : x_in_;
  auto like_x = [&] { return Tensor<T>(x.shape(), x.get_memory_type(), x.get_device_id()); };
  Tensor<T> dx = needed[0] ? like_x() : Tensor<T>();
  Tensor<T> dskip = has_skip() && needed[3] ? like_x() : Tensor<T>();
  Tensor<T> dgamma(this->in(1).shape(), x.get_memory_type(), x.get_device_id());
  Tensor<T> dbeta(this->in(2).shape(), x.get_memory_type(), x.get_device_id());
  math::batchnorm_backward_blocked(this->block_, x, relu_ ? &this->output_ : nullptr, g, this->in(1), mean_,
                                   invstd_, training_, dx.empty() ? nullptr : &dx, dskip.empty() ? nullptr : &dskip,
                                   dgamma, dbeta);
  // Back into an input's layout where it differs from the output's.
  auto back = [&](Tensor<T>& d, int to) {
    if (to == this->block_) return std::move(d);
    Tensor<T> out;
    (void)in_layout(d, this->block_, to, out);
    return out;
  };
  if (needed[0]) gin[0] = back(dx, bx);
  if (needed[1]) gin[1] = std::move(dgamma);
  if (needed[2]) gin[2] = std::move(dbeta);
  if (has_skip() && needed[3]) gin[3] = back(dskip, bs);
}

template class DropoutNode<float>;
template class DropoutNode<double>;
template class BatchNormNode<float>;
template class BatchNormNode<double>;

}  // namespace magmadnn::op
