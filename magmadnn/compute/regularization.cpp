#include "magmadnn/compute/regularization.h"

#include "magmadnn/compute/grad_utils.h"

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
namespace {
// {N, C, R} view of x (R = product of the axes after C; 1 for {N, C}).
template <typename T>
Tensor<T> ncr(const Tensor<T>& x) {
  const std::int64_t n = x.shape()[0], c = x.shape()[1];
  return x.view(Shape{n, c, x.size() / std::max<std::int64_t>(1, n * c)});
}
// Sum over axes 0 and 2 of {N, C, R}, kept as {1, C, 1}.
template <typename T>
Tensor<T> sum_nr(const Tensor<T>& v) {
  return math::sum(math::sum(v, 2, true), 0, true);
}
}  // namespace

template <typename T>
BatchNormNode<T>::BatchNormNode(OpPtr<T> x, OpPtr<T> gamma, OpPtr<T> beta, T momentum, T eps)
    : Operation<T>("batchnorm", {std::move(x), std::move(gamma), std::move(beta)}), momentum_(momentum), eps_(eps) {}

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
  return in[0];
}

template <typename T>
void BatchNormNode<T>::forward() {
  const Tensor<T>& x = this->in(0);
  infer_shape({x.shape(), this->in(1).shape(), this->in(2).shape()});
  const Tensor<T> xv = ncr(x);
  const std::int64_t c = xv.shape()[1];
  const Shape stat{1, c, 1};
  if (running_mean_.shape() != Shape{c}) {
    running_mean_ = detail::full_like(Shape{c}, T(0), x);
    running_var_ = detail::full_like(Shape{c}, T(1), x);
  }
  Tensor<T> xc;
  if (training_) {
    const T n = static_cast<T>(xv.shape()[0] * xv.shape()[2]);
    Tensor<T> mu = math::scale(sum_nr(xv), T(1) / n);
    xc = math::sub(xv, mu);
    Tensor<T> var = math::scale(sum_nr(math::product(xc, xc)), T(1) / n);
    invstd_ = math::unary(UnaryOp::Reciprocal, math::unary(UnaryOp::Sqrt, math::add_scalar(var, eps_)));
    // running = (1 - m) running + m batch (unbiased variance, as PyTorch)
    math::unary(UnaryOp::Scale, running_mean_, running_mean_, T(1) - momentum_);
    math::axpy(momentum_, mu, running_mean_);
    math::unary(UnaryOp::Scale, running_var_, running_var_, T(1) - momentum_);
    math::axpy(momentum_ * n / std::max(T(1), n - T(1)), var, running_var_);
  } else {
    xc = math::sub(xv, running_mean_.view(stat));
    invstd_ = math::unary(UnaryOp::Reciprocal, math::unary(UnaryOp::Sqrt, math::add_scalar(running_var_, eps_)));
    invstd_.reshape(stat);
  }
  xhat_ = math::product(xc, invstd_);
  Tensor<T> y = math::product(xhat_, this->in(1).view(stat));
  math::add(y, this->in(2).view(stat), y);
  y.reshape(x.shape());
  this->output_ = std::move(y);
}

template <typename T>
void BatchNormNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  const Tensor<T> gv = ncr(g);
  const std::int64_t c = gv.shape()[1];
  const Shape stat{1, c, 1};
  Tensor<T> dbeta = sum_nr(gv);
  Tensor<T> dgamma = sum_nr(math::product(gv, xhat_));
  const Tensor<T> gamma = this->in(1).view(stat);
  if (needed[0]) {
    Tensor<T> dx;
    if (training_) {
      // dx = gamma * invstd / n * (n g - sum(g) - xhat * sum(g xhat))
      const T n = static_cast<T>(gv.shape()[0] * gv.shape()[2]);
      dx = math::scale(gv, n);
      math::sub(dx, dbeta, dx);
      math::sub(dx, math::product(xhat_, dgamma), dx);
      math::product(dx, math::scale(math::product(gamma, invstd_), T(1) / n), dx);
    } else {
      dx = math::product(gv, math::product(gamma, invstd_));
    }
    dx.reshape(this->in(0).shape());
    gin[0] = std::move(dx);
  }
  if (needed[1]) {
    dgamma.reshape(this->in(1).shape());
    gin[1] = std::move(dgamma);
  }
  if (needed[2]) {
    dbeta.reshape(this->in(2).shape());
    gin[2] = std::move(dbeta);
  }
}

template class DropoutNode<float>;
template class DropoutNode<double>;
template class BatchNormNode<float>;
template class BatchNormNode<double>;

}  // namespace magmadnn::op
