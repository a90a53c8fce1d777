/// @file params.h
/// Plain settings and results of model training (paper §2.4, slides "Model").
///
/// nn_params_t is the paper's "Param struct". It is built in three ways, all
/// of which keep working together:
///
///   model::nn_params_t p;                  // defaults below
///   p.batch_size = 32;                     // MagmaDNN v1: assign fields by name
///   model::nn_params_t q{100, 10, 0.05};   // slides: batch size, epochs, rate
///   model::nn_params_t r{batch, epochs, lr};  // the same from variables
///
/// The three-value form takes any integer type for the two counts and any
/// arithmetic type for the rate, so `{batch, epochs, lr}` with `int`, `int`
/// and `float` variables compiles without narrowing under GCC and Clang. It
/// checks the values instead: a batch size or epoch count that is not
/// positive or does not fit `unsigned int`, or a learning rate that is
/// negative or not finite, throws ValueError naming the field and the value.
/// The remaining fields (momentum, betas, ...) are set by name.
#pragma once

#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "magmadnn/core/errors.h"
#include "magmadnn/optimizer/factory.h"  // optimizer_t, OptimizerSettings

namespace magmadnn::optimizer {
/// Loss of a NeuralNetwork (MagmaDNN v1 names). CROSS_ENTROPY on a softmax
/// output is computed fused and stable (log-sum-exp on the logits).
enum loss_t { CROSS_ENTROPY, MSE };
}  // namespace magmadnn::optimizer

namespace magmadnn::model {

namespace detail {
template <typename V, typename... Ts>
concept OneOf = (std::same_as<std::remove_cv_t<V>, Ts> || ...);
/// What nn_params_t accepts for a count: an integer type that is neither
/// bool nor a character type (the ones std::in_range refuses).
template <typename V>
concept ParamCount = std::integral<V> && !OneOf<V, bool, char, wchar_t, char8_t, char16_t, char32_t>;
/// What nn_params_t accepts for a rate: a count type or a floating-point type.
template <typename V>
concept ParamRate = ParamCount<V> || std::floating_point<V>;

template <ParamCount V>
unsigned int positive_count(V value, const char* field) {
  // cmp_greater / in_range compare across signedness without conversions,
  // so a negative int64_t or a size_t above UINT_MAX is caught, not wrapped.
  MAGMADNN_CHECK(std::cmp_greater(value, 0) && std::in_range<unsigned int>(value), ValueError,
                 "nn_params_t: " << field << " must be between 1 and " << std::numeric_limits<unsigned int>::max()
                                 << ", got " << +value);  // + prints a signed char as a number
  return static_cast<unsigned int>(value);
}

template <ParamRate V>
double checked_rate(V value, const char* field) {
  const double v = static_cast<double>(value);
  MAGMADNN_CHECK(std::isfinite(v) && v >= 0.0, ValueError,
                 "nn_params_t: " << field << " must be finite and >= 0, got " << v);
  return v;
}
}  // namespace detail

/// Hyperparameters of a NeuralNetwork or Model (see the file comment for the
/// ways to build one). Fields set by name are not checked here; the model
/// checks what it needs (e.g. batch_size > 0) when it is built.
struct nn_params_t {
  unsigned int batch_size = 32;
  unsigned int n_epochs = 1;
  double learning_rate = 0.05;
  double momentum = 0.0;        ///< SGD and LARS momentum (0: plain SGD)
  double weight_decay = 0.0;    ///< L2 (SGD, Adam, ...), decoupled (ADAMW, LAMB) or LARS's beta
  double beta1 = 0.9;           ///< Adam
  double beta2 = 0.999;         ///< Adam
  double epsilon = 1e-8;        ///< Adam, AdaGrad, RMSProp
  double decaying_factor = 0.99;  ///< RMSProp's rho (v1 name)
  double trust_coefficient = 0.001;  ///< LARS's eta
  bool exclude_vectors = false;  ///< LARS, LAMB: biases and BatchNorm parameters take the plain step
  bool nesterov = false;
  bool shuffle = true;          ///< reshuffle the training set every epoch (from the global seed)
  /// The loss of a Model (paper form). A NeuralNetwork takes its loss as a
  /// constructor argument and records it here.
  optimizer::loss_t loss = optimizer::CROSS_ENTROPY;
  /// The optimizer of a Model (paper form). A NeuralNetwork given an
  /// optimizer by name records it here; given an optimizer object, it
  /// leaves this field alone.
  optimizer::optimizer_t optimizer = optimizer::SGD;

  nn_params_t() = default;
  /// `{batch_size, n_epochs}`: the learning rate keeps its default.
  template <detail::ParamCount B, detail::ParamCount E>
  nn_params_t(B batch, E epochs)
      : batch_size(detail::positive_count(batch, "batch_size")),
        n_epochs(detail::positive_count(epochs, "n_epochs")) {}
  /// `{batch_size, n_epochs, learning_rate}` (slides).
  template <detail::ParamCount B, detail::ParamCount E, detail::ParamRate R>
  nn_params_t(B batch, E epochs, R rate)
      : batch_size(detail::positive_count(batch, "batch_size")),
        n_epochs(detail::positive_count(epochs, "n_epochs")),
        learning_rate(detail::checked_rate(rate, "learning_rate")) {}

  /// The optimizer these fields describe (decaying_factor is RMSProp's rho).
  optimizer::OptimizerSettings optimizer_settings() const {
    optimizer::OptimizerSettings s;
    s.kind = optimizer;
    s.learning_rate = learning_rate;
    s.momentum = momentum;
    s.nesterov = nesterov;
    s.weight_decay = weight_decay;
    s.beta1 = beta1;
    s.beta2 = beta2;
    s.epsilon = epsilon;
    s.rho = decaying_factor;
    s.trust_coefficient = trust_coefficient;
    s.exclude_vectors = exclude_vectors;
    return s;
  }
  /// Sets the optimizer fields from `s` (the inverse of optimizer_settings()).
  void set_optimizer_settings(const optimizer::OptimizerSettings& s) {
    optimizer = s.kind;
    learning_rate = s.learning_rate;
    momentum = s.momentum;
    nesterov = s.nesterov;
    weight_decay = s.weight_decay;
    beta1 = s.beta1;
    beta2 = s.beta2;
    epsilon = s.epsilon;
    decaying_factor = s.rho;
    trust_coefficient = s.trust_coefficient;
    exclude_vectors = s.exclude_vectors;
  }
};

/// Summary of the last fit (MagmaDNN v1 fields first).
struct metric_t {
  double accuracy = 0.0;        ///< training accuracy of the last epoch
  double loss = 0.0;            ///< training loss of the last epoch
  double training_time = 0.0;   ///< seconds spent in fit
  double samples_per_second = 0.0;
  unsigned int epochs = 0;
};

/// One line of the training history.
struct EpochRecord {
  unsigned int epoch = 0;  ///< 1-based
  double train_loss = 0.0;
  double train_accuracy = 0.0;
  double val_loss = std::numeric_limits<double>::quiet_NaN();      ///< NaN without validation data
  double val_accuracy = std::numeric_limits<double>::quiet_NaN();
  double seconds = 0.0;
  double samples_per_second = 0.0;
  double learning_rate = 0.0;
};

using History = std::vector<EpochRecord>;

/// Loss and accuracy of a model on a data set.
struct Evaluation {
  double loss = 0.0;
  double accuracy = 0.0;
  std::int64_t samples = 0;
};

}  // namespace magmadnn::model
