// The API forms of api_forms.h. Everything below is written the way the
// paper, the slides and v1 programs write it (umbrella header, `using
// namespace magmadnn;`, class template argument deduction for Model, braced
// params from variables); keep it that way, it is what is being tested.
#include "api_forms.h"

#include <magmadnn.h>

using namespace magmadnn;

namespace api_forms {

FormRun paper_form(Tensor<float>& x_train, Tensor<float>& y_train, bool verbose) {
  const std::int64_t n_features = x_train.shape()[1];
  const std::int64_t n_classes = y_train.shape()[1];

  model::nn_params_t params;
  params.batch_size = 10;
  params.n_epochs = 5;
  params.learning_rate = 0.5;

  auto x_batch = op::var<float>("x_batch", {params.batch_size, n_features}, {NONE, {}});
  auto input = layer::input(x_batch);
  auto fc1 = layer::fullyconnected(input->out(), 8);
  auto act1 = layer::activation(fc1->out(), layer::TANH);
  auto fc2 = layer::fullyconnected(act1->out(), n_classes);
  auto act2 = layer::activation(fc2->out(), layer::SOFTMAX);
  auto output = layer::output(act2->out());
  std::vector<layer::Layer<float>*> layers = {input, fc1, act1, fc2, act2, output};

  Model m (params, layers);
  FormRun run;
  run.loss_before = m.evaluate(x_train, y_train).loss;
  model::metric_t out;
  run.rc = m.fit(x_train, y_train, verbose, &out);
  run.out = out;
  run.loss_after = m.evaluate(x_train, y_train).loss;
  run.params = m.params();
  run.history = m.history().size();
  return run;
}

FormRun slides_form(Tensor<float>& x, Tensor<float>& y, int batch_size, int n_epochs, float learning_rate) {
  auto input = layer::input<float>({-1, x.shape()[1]});
  auto fc1 = layer::fullyconnected(input->out(), 8);
  auto act1 = layer::activation(fc1->out(), layer::RELU);
  auto fc2 = layer::fullyconnected(act1->out(), y.shape()[1]);
  auto act2 = layer::activation(fc2->out(), layer::SOFTMAX);
  auto output = layer::output(act2->out());
  std::vector<layer::Layer<float>*> layers = {input, fc1, act1, fc2, act2, output};

  model::NeuralNetwork<float> model(layers, optimizer::CROSS_ENTROPY, optimizer::ADAM,
                                    {batch_size, n_epochs, learning_rate});
  FormRun run;
  run.loss_before = model.evaluate(x, y).loss;
  model::metric_t metrics;
  run.rc = model.fit(x, y, metrics, false);
  run.out = metrics;
  run.loss_after = model.evaluate(x, y).loss;
  run.params = model.params();
  run.history = model.history().size();
  return run;
}

FormRun paper_form_shared(Tensor<double>* x, Tensor<double>* y, std::int64_t batch_size, std::size_t n_epochs,
                          double learning_rate) {
  std::vector<std::shared_ptr<layer::Layer<double>>> layers;
  layers.push_back(layer::input<double>({-1, x->shape()[1]}).ptr());
  layers.push_back(layer::fullyconnected(layers.back()->out(), 8).ptr());
  layers.push_back(layer::activation(layers.back()->out(), layer::SIGMOID).ptr());
  layers.push_back(layer::fullyconnected(layers.back()->out(), y->shape()[1]).ptr());
  layers.push_back(layer::activation(layers.back()->out(), layer::SOFTMAX).ptr());

  model::nn_params_t params{batch_size, n_epochs, learning_rate};
  params.optimizer = optimizer::ADAM;
  Model m(params, layers);
  FormRun run;
  run.loss_before = m.evaluate(*x, *y).loss;
  m.fit(x, y, false);  // no summary wanted
  run.rc = m.fit(x, y, false, &run.out);
  run.loss_after = m.evaluate(*x, *y).loss;
  run.params = m.params();
  run.history = m.history().size();
  return run;
}

std::vector<model::nn_params_t> count_forms(int batch, int epochs, double rate) {
  const auto u_batch = static_cast<unsigned>(batch), u_epochs = static_cast<unsigned>(epochs);
  const auto l_batch = static_cast<std::int64_t>(batch), l_epochs = static_cast<std::int64_t>(epochs);
  const auto z_batch = static_cast<std::size_t>(batch), z_epochs = static_cast<std::size_t>(epochs);
  const auto f_rate = static_cast<float>(rate);
  std::vector<model::nn_params_t> all;
  all.push_back({batch, epochs, f_rate});
  all.push_back({u_batch, u_epochs, rate});
  all.push_back({l_batch, z_epochs, f_rate});
  all.push_back({z_batch, l_epochs, rate});
  all.push_back({batch, epochs});
  all.push_back({100, 10, 0.05});
  return all;
}

}  // namespace api_forms
