/// @file adaptive.h
/// Optimizers with per-element adaptive rates: Adam (AdamW with decoupled
/// weight decay), AdaGrad and RMSProp. Formulations follow PyTorch's:
///  - Adam:    m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
///             p -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
///  - AdaGrad: s += g^2;                   p -= lr * g / (sqrt(s) + eps)
///  - RMSProp: s = a s + (1-a) g^2;        p -= lr * g / (sqrt(s) + eps)
/// The element type defaults to float, as for GradientDescent.
#pragma once

#include "magmadnn/optimizer/optimizer_base.h"

namespace magmadnn::optimizer {

template <typename T = float>
class Adam : public Optimizer<T> {
 public:
  explicit Adam(double learning_rate = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8);

 protected:
  std::vector<std::string> slot_names() const override { return {"m", "v"}; }
  void update(Tensor<T>& param, const Tensor<T>& grad, double lr, std::int64_t t,
              std::vector<Tensor<T>>& slots) override;

 private:
  double b1_, b2_, eps_;
};
Adam() -> Adam<float>;
Adam(double) -> Adam<float>;
Adam(double, double, double) -> Adam<float>;
Adam(double, double, double, double) -> Adam<float>;

/// Adam with decoupled weight decay (Loshchilov & Hutter).
template <typename T = float>
class AdamW : public Adam<T> {
 public:
  explicit AdamW(double learning_rate = 1e-3, double weight_decay = 1e-2, double beta1 = 0.9,
                 double beta2 = 0.999, double eps = 1e-8)
      : Adam<T>(learning_rate, beta1, beta2, eps) {
    this->set_weight_decay(weight_decay, WeightDecay::Decoupled);
  }
};
AdamW(double) -> AdamW<float>;
AdamW(double, double) -> AdamW<float>;

template <typename T = float>
class AdaGrad : public Optimizer<T> {
 public:
  explicit AdaGrad(double learning_rate = 1e-2, double eps = 1e-10);

 protected:
  std::vector<std::string> slot_names() const override { return {"sum_sq"}; }
  void update(Tensor<T>& param, const Tensor<T>& grad, double lr, std::int64_t t,
              std::vector<Tensor<T>>& slots) override;

 private:
  double eps_;
};
AdaGrad(double) -> AdaGrad<float>;
AdaGrad(double, double) -> AdaGrad<float>;

template <typename T = float>
class RMSProp : public Optimizer<T> {
 public:
  explicit RMSProp(double learning_rate = 1e-2, double decay_rate = 0.99, double eps = 1e-8);

 protected:
  std::vector<std::string> slot_names() const override { return {"mean_sq"}; }
  void update(Tensor<T>& param, const Tensor<T>& grad, double lr, std::int64_t t,
              std::vector<Tensor<T>>& slots) override;

 private:
  double rho_, eps_;
};
RMSProp(double) -> RMSProp<float>;
RMSProp(double, double) -> RMSProp<float>;
RMSProp(double, double, double) -> RMSProp<float>;

}  // namespace magmadnn::optimizer
