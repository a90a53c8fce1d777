/// @file factory.h
/// The one place an optimizer is built from settings: NeuralNetwork (by
/// optimizer_t, from nn_params_t) and the `magmadnn` command (by name, from
/// its config) both call optimizer::make, so a setting such as RMSProp's rho
/// means the same thing on both paths.
///
///   optimizer::OptimizerSettings s;  s.kind = optimizer::kind_from_name("adam");  s.beta1 = 0.8;
///   auto opt = optimizer::make<float>(s);
///
/// Guarantees: every optimizer_t value has a name (kind_names() lists them
/// in enum order) and a make() case; an unknown name or value throws
/// ValueError listing the known ones; weight_decay is L2 on the gradient for
/// every kind except ADAMW, where it is decoupled (AdamW's own), LARS, where
/// it is the beta of the trust ratio, and LAMB, where it is decoupled inside
/// the layer-wise step (both their own, never added a second time).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "magmadnn/optimizer/optimizer_base.h"

namespace magmadnn::optimizer {

/// Optimizer chosen by name (MagmaDNN v1 names and order).
enum optimizer_t { SGD, ADAM, ADAGRAD, RMSPROP, ADAMW, LARS, LAMB };

/// Every hyperparameter any built-in optimizer reads (defaults as PyTorch's,
/// but rho 0.99 and learning rate 0.05 as MagmaDNN v1).
struct OptimizerSettings {
  optimizer_t kind = SGD;
  double learning_rate = 0.05;
  double momentum = 0.0;      ///< SGD, LARS
  bool nesterov = false;      ///< SGD (needs momentum)
  double weight_decay = 0.0;  ///< L2, or decoupled for ADAMW and LAMB, or LARS's beta
  double beta1 = 0.9;         ///< Adam, AdamW, LAMB
  double beta2 = 0.999;       ///< Adam, AdamW, LAMB
  double epsilon = 1e-8;      ///< Adam, AdamW, AdaGrad, RMSProp, LAMB
  double rho = 0.99;          ///< RMSProp's decay of the squared-gradient average
  double trust_coefficient = 0.001;  ///< LARS's eta
  /// LARS, LAMB: tensors of fewer than two dimensions (biases, BatchNorm's
  /// scale and shift) take the plain step, without trust ratio or decay.
  bool exclude_vectors = false;
};

/// "sgd", "adam", "adagrad", "rmsprop", "adamw", "lars", "lamb", in enum order.
const std::vector<std::string>& kind_names();
/// The name of `kind` (ValueError for a value outside the enum).
const std::string& name_of(optimizer_t kind);
/// The kind named `name` (ValueError naming it and listing the known names).
optimizer_t kind_from_name(std::string_view name);

/// A new optimizer of `s.kind` with `s`'s hyperparameters.
template <typename T>
std::shared_ptr<Optimizer<T>> make(const OptimizerSettings& s);

}  // namespace magmadnn::optimizer
