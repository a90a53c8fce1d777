#include "magmadnn/layer/fully_connected.h"

#include "magmadnn/compute/linalg.h"
#include "magmadnn/compute/shape_ops.h"

namespace magmadnn::layer {

template <typename T>
FullyConnectedLayer<T>::FullyConnectedLayer(op::Expr<T> x, std::int64_t units, bool use_bias,
                                            const tensor_filler_t<T>& weight_init, std::string name)
    : Layer<T>(std::move(name), std::move(x), "fullyconnected"), units_(units) {
  MAGMADNN_CHECK(units > 0, ValueError, "layer::fullyconnected " << this->name_ << ": units must be positive, got "
                                                                 << units);
  const Shape in = this->known_input_shape();
  MAGMADNN_CHECK(in.ndim() >= 2, ShapeError,
                 "layer::fullyconnected " << this->name_ << ": input must be {batch, features...}, got " << in);
  const std::int64_t features = in.numel() / in[0];
  w_ = this->add_weight("W", Shape{units, features}, weight_init);
  if (use_bias) b_ = this->add_weight("b", Shape{units}, {ZERO});
  build();
}

template <typename T>
FullyConnectedLayer<T>::FullyConnectedLayer(op::Expr<T> x, op::Var<T> w, op::Var<T> b, std::string name)
    : Layer<T>(std::move(name), std::move(x), "fullyconnected"), w_(std::move(w)), b_(std::move(b)) {
  MAGMADNN_CHECK(w_, ValueError, "layer::fullyconnected " << this->name_ << ": empty weight handle");
  const Shape ws = w_->output().shape();
  MAGMADNN_CHECK(ws.ndim() == 2, ShapeError,
                 "layer::fullyconnected " << this->name_ << ": W must be {units, in_features}, got " << ws);
  units_ = ws[0];
  this->add_weight("W", w_);
  if (b_) this->add_weight("b", b_);
  build();
}

template <typename T>
void FullyConnectedLayer<T>::build() {
  MAGMADNN_CHECK(this->input_, ValueError, "layer::fullyconnected " << this->name_ << ": empty input handle");
  // Flatten lazily in the graph: the batch size stays free.
  op::Expr<T> x = this->input_;
  if (this->known_input_shape().ndim() > 2) x = op::flatten(x);
  this->set_output(b_ ? op::linear(x, w_, b_) : op::linear(x, w_));
}

template class FullyConnectedLayer<float>;
template class FullyConnectedLayer<double>;

}  // namespace magmadnn::layer
