#include "magmadnn/layer/batchnorm_layer.h"

namespace magmadnn::layer {

namespace {
std::int64_t channels_of(const Shape& s, const std::string& name) {
  MAGMADNN_CHECK(s.ndim() >= 2, ShapeError, "layer::batchnorm " << name << ": input must be {N, C, ...}, got " << s);
  return s[1];
}
}  // namespace

template <typename T>
BatchNormLayer<T>::BatchNormLayer(op::Expr<T> x, double momentum, double eps, std::string name)
    : Layer<T>(std::move(name), std::move(x), "batchnorm") {
  const std::int64_t c = channels_of(this->known_input_shape(), this->name_);
  gamma_ = this->add_weight("gamma", Shape{c}, {ONE});
  beta_ = this->add_weight("beta", Shape{c}, {ZERO});
  build(momentum, eps);
}

template <typename T>
BatchNormLayer<T>::BatchNormLayer(op::Expr<T> x, op::Var<T> gamma, op::Var<T> beta, double momentum, double eps,
                                  std::string name)
    : Layer<T>(std::move(name), std::move(x), "batchnorm"), gamma_(std::move(gamma)), beta_(std::move(beta)) {
  this->add_weight("gamma", gamma_);
  this->add_weight("beta", beta_);
  build(momentum, eps);
}

template <typename T>
void BatchNormLayer<T>::build(double momentum, double eps) {
  MAGMADNN_CHECK(momentum >= 0.0 && momentum <= 1.0, ValueError,
                 "layer::batchnorm " << this->name_ << ": momentum must be in [0, 1], got " << momentum);
  MAGMADNN_CHECK(eps > 0.0, ValueError, "layer::batchnorm " << this->name_ << ": eps must be positive, got " << eps);
  const std::int64_t c = channels_of(this->known_input_shape(), this->name_);
  eps_ = eps;
  op::Expr<T> out = op::batchnorm(this->input_, gamma_, beta_, momentum, eps);
  node_ = std::dynamic_pointer_cast<op::BatchNormNode<T>>(out.ptr());
  MAGMADNN_CHECK(node_ != nullptr, ValueError, "layer::batchnorm: op::batchnorm did not build a batchnorm node");
  // The node would create these at its first forward pass; creating them
  // now, in the parameters' memory, makes them checkpointable at once.
  const memory_t mem = gamma_->output().get_memory_type();
  node_->running_mean() = Tensor<T>(Shape{c}, {ZERO}, mem);
  node_->running_var() = Tensor<T>(Shape{c}, {ONE}, mem);
  this->set_output(out);
}

template <typename T>
std::vector<std::pair<std::string, Tensor<T>*>> BatchNormLayer<T>::get_state() {
  return {{this->name_ + "/running_mean", &node_->running_mean()},
          {this->name_ + "/running_var", &node_->running_var()}};
}

template class BatchNormLayer<float>;
template class BatchNormLayer<double>;

}  // namespace magmadnn::layer
