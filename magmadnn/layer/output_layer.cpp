#include "magmadnn/layer/output_layer.h"

namespace magmadnn::layer {

template <typename T>
OutputLayer<T>::OutputLayer(op::Expr<T> x, std::string name) : Layer<T>(std::move(name), std::move(x), "output") {
  MAGMADNN_CHECK(this->input_, ValueError, "layer::output: empty input handle");
  this->set_output(this->input_);
}

template class OutputLayer<float>;
template class OutputLayer<double>;

}  // namespace magmadnn::layer
