#include "magmadnn/optimizer/adaptive.h"

#include <cmath>

#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::optimizer {

namespace {
// num / (sqrt(s) * s_scale + eps): the direction the parameter moves along
// (times -lr_eff), in a temporary.
template <typename T>
Tensor<T> scaled_direction(const Tensor<T>& num, const Tensor<T>& s, double s_scale, double eps) {
  Tensor<T> denom = math::unary(UnaryOp::Sqrt, s);
  if (s_scale != 1.0) math::unary(UnaryOp::Scale, denom, denom, static_cast<T>(s_scale));
  math::unary(UnaryOp::AddScalar, denom, denom, static_cast<T>(eps));
  math::div(num, denom, denom);
  return denom;
}

// s = decay * s + (1 - decay) * g^2  (decay = 1 and weight 1 for AdaGrad's running sum).
template <typename T>
void accumulate_square(Tensor<T>& s, const Tensor<T>& g, double decay, double weight) {
  Tensor<T> g2 = math::product(g, g);
  if (decay != 1.0) math::unary(UnaryOp::Scale, s, s, static_cast<T>(decay));
  math::axpy(static_cast<T>(weight), g2, s);
}
}  // namespace

template <typename T>
Adam<T>::Adam(double learning_rate, double beta1, double beta2, double eps)
    : Optimizer<T>(learning_rate), b1_(beta1), b2_(beta2), eps_(eps) {
  MAGMADNN_CHECK(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, ValueError,
                 "Adam: betas must be in [0, 1), got " << beta1 << " and " << beta2);
}

template <typename T>
void Adam<T>::update(Tensor<T>& p, const Tensor<T>& g, double lr, std::int64_t t, std::vector<Tensor<T>>& slots) {
  Tensor<T>& m = slots[0];
  Tensor<T>& v = slots[1];
  math::unary(UnaryOp::Scale, m, m, static_cast<T>(b1_));
  math::axpy(static_cast<T>(1.0 - b1_), g, m);
  accumulate_square(v, g, b2_, 1.0 - b2_);
  const double bc1 = 1.0 - std::pow(b1_, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(b2_, static_cast<double>(t));
  this->write_param(static_cast<T>(-lr / bc1), scaled_direction(m, v, 1.0 / std::sqrt(bc2), eps_), T(1), p);
}

template <typename T>
AdaGrad<T>::AdaGrad(double learning_rate, double eps) : Optimizer<T>(learning_rate), eps_(eps) {}

template <typename T>
void AdaGrad<T>::update(Tensor<T>& p, const Tensor<T>& g, double lr, std::int64_t, std::vector<Tensor<T>>& slots) {
  accumulate_square(slots[0], g, 1.0, 1.0);
  this->write_param(static_cast<T>(-lr), scaled_direction(g, slots[0], 1.0, eps_), T(1), p);
}

template <typename T>
RMSProp<T>::RMSProp(double learning_rate, double decay_rate, double eps)
    : Optimizer<T>(learning_rate), rho_(decay_rate), eps_(eps) {
  MAGMADNN_CHECK(decay_rate >= 0 && decay_rate < 1, ValueError, "RMSProp: decay rate must be in [0, 1)");
}

template <typename T>
void RMSProp<T>::update(Tensor<T>& p, const Tensor<T>& g, double lr, std::int64_t, std::vector<Tensor<T>>& slots) {
  accumulate_square(slots[0], g, rho_, 1.0 - rho_);
  this->write_param(static_cast<T>(-lr), scaled_direction(g, slots[0], 1.0, eps_), T(1), p);
}

template class Adam<float>;
template class Adam<double>;
template class AdaGrad<float>;
template class AdaGrad<double>;
template class RMSProp<float>;
template class RMSProp<double>;

}  // namespace magmadnn::optimizer
