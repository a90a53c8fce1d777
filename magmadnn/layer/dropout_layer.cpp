#include "magmadnn/layer/dropout_layer.h"

#include "magmadnn/compute/regularization.h"

namespace magmadnn::layer {

template <typename T>
DropoutLayer<T>::DropoutLayer(op::Expr<T> x, double dropout_rate, std::string name)
    : Layer<T>(std::move(name), std::move(x), "dropout"), rate_(dropout_rate) {
  MAGMADNN_CHECK(this->input_, ValueError, "layer::dropout: empty input handle");
  MAGMADNN_CHECK(dropout_rate >= 0.0 && dropout_rate < 1.0, ValueError,
                 "layer::dropout " << this->name_ << ": dropout rate (probability of dropping) must be in [0, 1), got "
                                   << dropout_rate);
  this->set_output(op::dropout(this->input_, 1.0 - dropout_rate));
}

template class DropoutLayer<float>;
template class DropoutLayer<double>;

}  // namespace magmadnn::layer
