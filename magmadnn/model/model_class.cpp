// Model: NeuralNetwork configured from its params alone (paper §2.4).
#include "magmadnn/model/model_class.h"

#include <utility>

#include "magmadnn/core/errors.h"

namespace magmadnn::model {

template <typename T>
Model<T>::Model(nn_params_t params, std::vector<layer::Layer<T>*> layers)
    : NeuralNetwork<T>(std::move(layers), params.loss, params.optimizer, params) {}

template <typename T>
Model<T>::Model(nn_params_t params, std::vector<std::shared_ptr<layer::Layer<T>>> layers)
    : NeuralNetwork<T>(std::move(layers), params.loss, params.optimizer, params) {}

template <typename T>
magmadnn_error_t Model<T>::fit(const Tensor<T>& x, const Tensor<T>& y, bool verbose, metric_t* out) {
  // Train into a local summary so that a fit that throws leaves *out as it was.
  metric_t summary;
  const magmadnn_error_t rc = NeuralNetwork<T>::fit(x, y, summary, verbose);
  if (out != nullptr) *out = summary;
  return rc;
}

template <typename T>
magmadnn_error_t Model<T>::fit(Tensor<T>* x, Tensor<T>* y, bool verbose, metric_t* out) {
  MAGMADNN_CHECK(x != nullptr && y != nullptr, ValueError, "Model::fit: null data pointer");
  return fit(*x, *y, verbose, out);
}

template class Model<float>;
template class Model<double>;

}  // namespace magmadnn::model
