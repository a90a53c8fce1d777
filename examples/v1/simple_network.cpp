// A MagmaDNN v1-style program: a 784-784-500-10 ReLU network trained on the
// MNIST-format files found in the working directory (train-images-idx3-ubyte
// etc., or their .gz), with the v1 layer factories, raw layer pointers and
// the v1 fit(&x, &y, metrics, verbose) call. Run it in a folder holding the
// Fashion-MNIST files under MNIST's names; an argument N prints sample N.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "magmadnn.h"

using namespace magmadnn;

int main(int argc, char** argv) {
  using T = float;
  magmadnn_init();

  std::string const data_dir = ".";
  data::MNIST<T> train_set(data_dir, data::Train);
  data::MNIST<T> test_set(data_dir, data::Test);

  uint32_t n_features = train_set.nrows() * train_set.ncols();
  if (argc == 2) train_set.print_image(std::atoi(argv[1]));

  model::nn_params_t params;
  params.batch_size = 32;
  params.n_epochs = 5;
  params.learning_rate = 0.05;

  memory_t training_memory_type;
#if defined(MAGMADNN_HAVE_CUDA)
  training_memory_type = DEVICE;
  std::cout << "Training on GPUs" << std::endl;
#else
  training_memory_type = HOST;
  std::cout << "Training on CPUs" << std::endl;
#endif

  auto x_batch = op::var<T>("x_batch", {params.batch_size, n_features}, {NONE, {}}, training_memory_type);

  auto input = layer::input(x_batch);
  auto fc1 = layer::fullyconnected(input->out(), 784, false);
  auto act1 = layer::activation(fc1->out(), layer::RELU);
  auto fc2 = layer::fullyconnected(act1->out(), 500, false);
  auto act2 = layer::activation(fc2->out(), layer::RELU);
  auto fc3 = layer::fullyconnected(act2->out(), train_set.nclasses(), false);
  auto act3 = layer::activation(fc3->out(), layer::SOFTMAX);
  auto output = layer::output(act3->out());

  std::vector<layer::Layer<float>*> layers = {input, fc1, act1, fc2, act2, fc3, act3, output};

  model::NeuralNetwork<float> model(layers, optimizer::CROSS_ENTROPY, optimizer::SGD, params);
  model::metric_t metrics;
  model.fit(&train_set.images(), &train_set.labels(), metrics, true);

  std::cout << "training accuracy " << metrics.accuracy << ", loss " << metrics.loss << ", "
            << metrics.training_time << " s" << std::endl;

  delete output;
  magmadnn_finalize();
  return 0;
}
