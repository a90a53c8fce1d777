// The published API forms (paper §2.4, the slides, MagmaDNN v1 params),
// written in api_forms.cpp exactly as a user would write them. That file is
// compiled twice: into test_model (g++, run by test_paper_api.cpp) and with
// clang++ -fsyntax-only (ctest model_api_forms_clang), so both compilers
// accept the forms. No gtest here: the forms must stand on magmadnn.h alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "magmadnn.h"

namespace api_forms {

/// What one form did: the loss over the training data before and after fit,
/// what fit returned and the summary it filled.
struct FormRun {
  double loss_before = 0.0;
  double loss_after = 0.0;
  magmadnn::magmadnn_error_t rc = -1;
  magmadnn::model::metric_t out;
  magmadnn::model::nn_params_t params;  ///< the network's params() after fit
  std::size_t history = 0;              ///< epochs in the network's history
};

/// The paper: v1 layer factories, params by field assignment, then
/// `Model m (params, layers); m.fit(x_train, y_train, verbose, &out);`.
/// Trains 5 epochs of batch 10 with SGD at rate 0.5.
FormRun paper_form(magmadnn::Tensor<float>& x_train, magmadnn::Tensor<float>& y_train, bool verbose);

/// The slides: `model::NeuralNetwork<float> model(layers,
/// optimizer::CROSS_ENTROPY, optimizer::ADAM, {batch_size, n_epochs,
/// learning_rate});` with the three values coming in as int, int, float.
FormRun slides_form(magmadnn::Tensor<float>& x, magmadnn::Tensor<float>& y, int batch_size, int n_epochs,
                    float learning_rate);

/// The paper form on double, with shared layers, `{batch, epochs, lr}` from
/// int64_t / size_t / double, ADAM chosen through params.optimizer, and the
/// pointer fit: first with a null `out`, then filling it.
FormRun paper_form_shared(magmadnn::Tensor<double>* x, magmadnn::Tensor<double>* y, std::int64_t batch_size,
                          std::size_t n_epochs, double learning_rate);

/// nn_params_t from every accepted mix of count and rate types, in this
/// order: {int, int, float}, {unsigned, unsigned, double},
/// {int64_t, size_t, float}, {size_t, int64_t, double}, {int, int} (default
/// rate), and the literals {100, 10, 0.05}. All take the same `batch`,
/// `epochs` and `rate` values except the last.
std::vector<magmadnn::model::nn_params_t> count_forms(int batch, int epochs, double rate);

}  // namespace api_forms
