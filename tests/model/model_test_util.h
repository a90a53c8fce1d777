// Small layers and data sets for the model tests. The layers are written
// here on purpose, against nothing but layer::Layer<T>: that is how a user
// adds their own.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "magmadnn.h"
#include "magmadnn/layer/layer.h"
#include "magmadnn/model/model.h"

namespace mtest {
using namespace magmadnn;

template <typename T>
class TestInput : public layer::Layer<T> {
 public:
  TestInput(std::int64_t dim, std::string name) : layer::Layer<T>(std::move(name), op::Expr<T>()) {
    ph_ = op::placeholder<T>(this->get_name() + "/x", {-1, dim});
    Tensor<T> zeros({1, dim}, {ZERO});
    ph_->set_value(zeros);
    this->set_output(ph_);
  }
  std::string type_name() const override { return "TestInput"; }

 private:
  op::Var<T> ph_;
};

template <typename T>
class TestDense : public layer::Layer<T> {
 public:
  TestDense(op::Expr<T> in, std::int64_t units, std::string name) : layer::Layer<T>(std::move(name), in) {
    const std::int64_t fan_in = in->get_output_shape()[1];
    auto w = op::var<T>(this->get_name() + "/W", {units, fan_in}, {GLOROT});
    auto b = op::var<T>(this->get_name() + "/b", {units}, {ZERO});
    this->add_weight("W", w);
    this->add_weight("b", b);
    this->set_output(op::add(op::matmul(in, w, false, true), b));
  }
  std::string type_name() const override { return "TestDense"; }
};

enum class Act { Sigmoid, Relu, Tanh, Softmax };

template <typename T>
class TestAct : public layer::Layer<T> {
 public:
  TestAct(op::Expr<T> in, Act a, std::string name) : layer::Layer<T>(std::move(name), in) {
    switch (a) {
      case Act::Sigmoid: this->set_output(op::sigmoid(in)); break;
      case Act::Relu: this->set_output(op::relu(in)); break;
      case Act::Tanh: this->set_output(op::tanh(in)); break;
      case Act::Softmax: this->set_output(op::softmax(in)); break;
    }
  }
  std::string type_name() const override { return "TestAct"; }
};

template <typename T>
class TestDropout : public layer::Layer<T> {
 public:
  TestDropout(op::Expr<T> in, double keep, std::string name) : layer::Layer<T>(std::move(name), in) {
    this->set_output(op::dropout(in, keep));
  }
  std::string type_name() const override { return "TestDropout"; }
};

template <typename T>
using LayerVec = std::vector<std::shared_ptr<layer::Layer<T>>>;

/// in(dim) -> dense(hidden) -> act -> [dropout] -> dense(classes) -> softmax
template <typename T>
LayerVec<T> mlp(std::int64_t dim, std::int64_t hidden, std::int64_t classes, Act act = Act::Tanh,
                double keep = 1.0) {
  LayerVec<T> ls;
  ls.push_back(layer::make_layer<TestInput<T>>(dim, "in").ptr());
  ls.push_back(layer::make_layer<TestDense<T>>(ls.back()->out(), hidden, "fc1").ptr());
  ls.push_back(layer::make_layer<TestAct<T>>(ls.back()->out(), act, "act1").ptr());
  if (keep < 1.0) ls.push_back(layer::make_layer<TestDropout<T>>(ls.back()->out(), keep, "drop").ptr());
  ls.push_back(layer::make_layer<TestDense<T>>(ls.back()->out(), classes, "fc2").ptr());
  ls.push_back(layer::make_layer<TestAct<T>>(ls.back()->out(), Act::Softmax, "softmax").ptr());
  return ls;
}

/// Two Gaussian blobs in `dim` dimensions, one-hot labels {n, 2}.
template <typename T>
void blobs(std::int64_t n, std::int64_t dim, Tensor<T>& x, Tensor<T>& y, unsigned seed = 1, double sep = 2.0) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<T> xv(n * dim), yv(n * 2, T(0));
  for (std::int64_t i = 0; i < n; ++i) {
    const int c = static_cast<int>(i % 2);
    for (std::int64_t d = 0; d < dim; ++d) xv[i * dim + d] = static_cast<T>((c ? sep : -sep) / 2 + noise(gen));
    yv[i * 2 + c] = T(1);
  }
  x = Tensor<T>::from_vector({n, dim}, xv);
  y = Tensor<T>::from_vector({n, 2}, yv);
}

/// Every parameter's bytes, concatenated (for bit-for-bit comparisons).
template <typename T>
std::vector<unsigned char> weight_bytes(const model::NeuralNetwork<T>& m) {
  std::vector<unsigned char> out;
  for (const auto& p : m.parameters()) {
    const auto v = p->value().to_vector();
    const auto* b = reinterpret_cast<const unsigned char*>(v.data());
    out.insert(out.end(), b, b + v.size() * sizeof(T));
  }
  return out;
}

inline std::string temp_dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "magmadnn_model_" + name + "_" + std::to_string(::getpid());
  std::filesystem::create_directories(d);
  return d;
}

// A training plugin whose calls are functions set by the test (each unset
// one does nothing). It keeps the gradients (wants_gradients), so plain SGD
// runs its separate update.
template <typename T>
struct PluginProbe : model::TrainingPlugin<T> {
  std::function<void(std::size_t, const op::Var<T>&, Tensor<T>&)> ready;
  std::function<void(const std::vector<Tensor<T>*>&)> finished;
  std::function<bool()> update;
  std::function<void()> after;
  bool wants_gradients() const override { return true; }
  void gradient_ready(std::size_t i, const op::Var<T>& v, Tensor<T>& g) override {
    if (ready) ready(i, v, g);
  }
  void backward_finished(const std::vector<Tensor<T>*>& grads) override {
    if (finished) finished(grads);
  }
  bool apply_update() override { return update ? update() : true; }
  void after_update() override {
    if (after) after();
  }
};

}  // namespace mtest
