/// @file params.h
/// Plain settings and results of model training (paper §2.4, slides "Model").
///
/// nn_params_t lists batch_size, n_epochs and learning_rate first, so the
/// slides' `{batch_size, n_epochs, learning_rate}` aggregate initialisation
/// and MagmaDNN v1's field assignments both work.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace magmadnn::optimizer {
/// Loss of a NeuralNetwork (MagmaDNN v1 names). CROSS_ENTROPY on a softmax
/// output is computed fused and stable (log-sum-exp on the logits).
enum loss_t { CROSS_ENTROPY, MSE };
/// Optimizer chosen by name (MagmaDNN v1 names; SGD uses nn_params_t::momentum).
enum optimizer_t { SGD, ADAM, ADAGRAD, RMSPROP, ADAMW };
}  // namespace magmadnn::optimizer

namespace magmadnn::model {

struct nn_params_t {
  unsigned int batch_size = 32;
  unsigned int n_epochs = 1;
  double learning_rate = 0.05;
  double momentum = 0.0;        ///< SGD momentum (0: plain SGD)
  double weight_decay = 0.0;    ///< L2 (SGD, Adam, ...) or decoupled (ADAMW)
  double beta1 = 0.9;           ///< Adam
  double beta2 = 0.999;         ///< Adam
  double epsilon = 1e-8;        ///< Adam, AdaGrad, RMSProp
  double decaying_factor = 0.99;  ///< RMSProp's rho (v1 name)
  bool nesterov = false;
  bool shuffle = true;          ///< reshuffle the training set every epoch (from the global seed)
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
