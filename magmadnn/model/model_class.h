/// @file model_class.h
/// model::Model<T>: the paper's form of a network (MagmaDNN paper §2.4,
/// "Creating models only requires two structures: a Param struct ... and a
/// vector of network layers"):
///
///   model::nn_params_t params{batch_size, n_epochs, learning_rate};
///   params.loss = optimizer::CROSS_ENTROPY;   // the defaults
///   params.optimizer = optimizer::SGD;
///   Model m(params, layers);                  // T deduced from the layers
///   model::metric_t out;
///   m.fit(x_train, y_train, verbose, &out);
///
/// A Model is a NeuralNetwork<T> whose loss and optimizer come from the
/// params (nn_params_t::loss and nn_params_t::optimizer) instead of separate
/// constructor arguments; every other member (evaluate, predict, save, load,
/// callbacks through FitOptions) is NeuralNetwork's, with the same
/// requirements and guarantees (see neural_network.h). T is float or double.
#pragma once

#include <memory>
#include <vector>

#include "magmadnn/layer/layer.h"
#include "magmadnn/model/neural_network.h"
#include "magmadnn/model/params.h"

namespace magmadnn::model {

template <typename T>
class Model final : public NeuralNetwork<T> {
 public:
  /// Layers as raw pointers (v1 style: from the layer factories); the model
  /// takes shared ownership as NeuralNetwork does.
  Model(nn_params_t params, std::vector<layer::Layer<T>*> layers);
  /// Shared layers. (Spelled out rather than NeuralNetwork<T>::LayerPtr so
  /// that `Model m(params, layers);` can deduce T from either vector.)
  Model(nn_params_t params, std::vector<std::shared_ptr<layer::Layer<T>>> layers);

  // NeuralNetwork's fit overloads (FitOptions, metric_t&) stay available.
  using NeuralNetwork<T>::fit;

  /// The paper's fit: trains for params.n_epochs epochs on (x, y), printing
  /// one line per epoch when `verbose`, and, when `out` is not null, fills
  /// *out from the last epoch (accuracy, loss, time, throughput, epochs).
  /// Returns 0; errors throw as in NeuralNetwork::fit (ValueError,
  /// ShapeError, a ValueError for a NaN loss, ...), leaving *out unchanged.
  magmadnn_error_t fit(const Tensor<T>& x, const Tensor<T>& y, bool verbose, metric_t* out = nullptr);
  /// The same with pointers to the data (v1 style); null x or y throws ValueError.
  magmadnn_error_t fit(Tensor<T>* x, Tensor<T>* y, bool verbose, metric_t* out = nullptr);
};

extern template class Model<float>;
extern template class Model<double>;

}  // namespace magmadnn::model

namespace magmadnn {
/// The paper writes `Model m(params, layers);` after `using namespace magmadnn;`.
using model::Model;
}  // namespace magmadnn
