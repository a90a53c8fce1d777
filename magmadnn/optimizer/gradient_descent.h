/// @file gradient_descent.h
/// Stochastic gradient descent, optionally with momentum or Nesterov momentum
/// (PyTorch's formulation: v = mu * v + g; p -= lr * v, or for Nesterov
/// p -= lr * (g + mu * v)).
///
/// The element type defaults to float so that the slides' line compiles:
///   optimizer::GradientDescent opt(0.05);    // GradientDescent<float>
/// Use GradientDescent<double> for double graphs.
#pragma once

#include "magmadnn/optimizer/optimizer_base.h"

namespace magmadnn::optimizer {

template <typename T = float>
class GradientDescent : public Optimizer<T> {
 public:
  explicit GradientDescent(double learning_rate, double momentum = 0.0, bool nesterov = false);
  double momentum() const noexcept { return mu_; }
  bool nesterov() const noexcept { return nesterov_; }

 protected:
  std::vector<std::string> slot_names() const override;
  bool l2_is_decoupled() const override { return mu_ == 0.0; }
  bool update_is_plain_descent() const override { return mu_ == 0.0; }
  void update_decayed(Tensor<T>& param, const Tensor<T>& grad, double lr, std::int64_t t,
                      std::vector<Tensor<T>>& slots, T keep) override;
  void update(Tensor<T>& param, const Tensor<T>& grad, double lr, std::int64_t t,
              std::vector<Tensor<T>>& slots) override;

 private:
  double mu_;
  bool nesterov_;
};
GradientDescent(double) -> GradientDescent<float>;
GradientDescent(double, double) -> GradientDescent<float>;
GradientDescent(double, double, bool) -> GradientDescent<float>;

/// Gradient descent with (heavy-ball) momentum.
template <typename T = float>
class Momentum : public GradientDescent<T> {
 public:
  Momentum(double learning_rate, double momentum) : GradientDescent<T>(learning_rate, momentum, false) {}
};
Momentum(double, double) -> Momentum<float>;

/// Gradient descent with Nesterov momentum.
template <typename T = float>
class Nesterov : public GradientDescent<T> {
 public:
  Nesterov(double learning_rate, double momentum) : GradientDescent<T>(learning_rate, momentum, true) {}
};
Nesterov(double, double) -> Nesterov<float>;

}  // namespace magmadnn::optimizer
