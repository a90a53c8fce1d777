#include "magmadnn/layer/fully_connected.h"

#include "magmadnn/compute/folded_linear.h"
#include "magmadnn/compute/linalg.h"
#include "magmadnn/compute/shape_ops.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::layer {

template <typename T>
FullyConnectedLayer<T>::FullyConnectedLayer(op::Expr<T> x, std::int64_t units, BiasForm bias,
                                            const tensor_filler_t<T>& weight_init, std::string name)
    : Layer<T>(std::move(name), std::move(x), "fullyconnected"), units_(units), form_(bias) {
  MAGMADNN_CHECK(units > 0, ValueError, "layer::fullyconnected " << this->name_ << ": units must be positive, got "
                                                                 << units);
  const Shape in = this->known_input_shape();
  MAGMADNN_CHECK(in.ndim() >= 2, ShapeError,
                 "layer::fullyconnected " << this->name_ << ": input must be {batch, features...}, got " << in);
  const std::int64_t features = in.numel() / in[0];
  if (form_ == BiasForm::folded) {
    // W drawn as the separate form draws it (same stream), then realigned
    // behind a zero bias column: [0 | W].
    const Tensor<T> w(Shape{units, features}, weight_init, this->input_memory());
    wb_ = this->add_weight("Wb", Shape{units, features + 1}, {NONE});
    math::shift_right(w, T(0), wb_->value());
  } else {
    w_ = this->add_weight("W", Shape{units, features}, weight_init);
    if (form_ == BiasForm::separate) b_ = this->add_weight("b", Shape{units}, {ZERO});
  }
  build();
}

template <typename T>
FullyConnectedLayer<T>::FullyConnectedLayer(op::Expr<T> x, op::Var<T> w, op::Var<T> b, std::string name)
    : Layer<T>(std::move(name), std::move(x), "fullyconnected"),
      form_(b ? BiasForm::separate : BiasForm::none),
      w_(std::move(w)),
      b_(std::move(b)) {
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
  if (form_ == BiasForm::folded) {
    this->set_output(op::folded_linear(x, wb_));
  } else {
    this->set_output(b_ ? op::linear(x, w_, b_) : op::linear(x, w_));
  }
}

template <typename T>
std::pair<Tensor<T>, Tensor<T>> FullyConnectedLayer<T>::unfolded() const {
  if (form_ != BiasForm::folded) {
    Tensor<T> w = Tensor<T>::from_vector(w_->value().shape(), w_->value().to_vector(), HOST);
    if (!b_) return {std::move(w), Tensor<T>()};
    return {std::move(w), Tensor<T>::from_vector(Shape{units_}, b_->value().to_vector(), HOST)};
  }
  const Tensor<T>& wb = wb_->value();
  const std::int64_t cols = wb.shape()[1];
  Tensor<T> w(Shape{units_, cols - 1}, wb.get_memory_type(), wb.get_device_id());
  math::shift_left(wb, w);  // W: [b | W] less its first column
  const std::vector<T> all = wb.to_vector();
  std::vector<T> b(static_cast<std::size_t>(units_));
  for (std::int64_t i = 0; i < units_; ++i) b[i] = all[i * cols];
  return {Tensor<T>::from_vector(w.shape(), w.to_vector(), HOST), Tensor<T>::from_vector(Shape{units_}, b, HOST)};
}

template class FullyConnectedLayer<float>;
template class FullyConnectedLayer<double>;

}  // namespace magmadnn::layer
