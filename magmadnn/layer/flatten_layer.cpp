#include "magmadnn/layer/flatten_layer.h"

#include "magmadnn/compute/shape_ops.h"

namespace magmadnn::layer {

template <typename T>
FlattenLayer<T>::FlattenLayer(op::Expr<T> x, std::string name) : Layer<T>(std::move(name), std::move(x), "flatten") {
  MAGMADNN_CHECK(this->input_, ValueError, "layer::flatten: empty input handle");
  this->set_output(op::flatten(this->input_));
}

template class FlattenLayer<float>;
template class FlattenLayer<double>;

}  // namespace magmadnn::layer
