#include "magmadnn/optimizer/gradient_descent.h"

#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::optimizer {

template <typename T>
GradientDescent<T>::GradientDescent(double learning_rate, double momentum, bool nesterov)
    : Optimizer<T>(learning_rate), mu_(momentum), nesterov_(nesterov) {
  MAGMADNN_CHECK(momentum >= 0.0, ValueError, "GradientDescent: momentum must be >= 0, got " << momentum);
  MAGMADNN_CHECK(!nesterov || momentum > 0.0, ValueError, "GradientDescent: Nesterov needs a momentum > 0");
}

template <typename T>
std::vector<std::string> GradientDescent<T>::slot_names() const {
  if (mu_ == 0.0) return {};
  return {"velocity"};
}

template <typename T>
void GradientDescent<T>::update(Tensor<T>& p, const Tensor<T>& g, double lr, std::int64_t,
                                std::vector<Tensor<T>>& slots) {
  if (mu_ == 0.0) {
    this->write_param(static_cast<T>(-lr), g, T(1), p);
    return;
  }
  Tensor<T>& v = slots[0];
  math::unary(UnaryOp::Scale, v, v, static_cast<T>(mu_));
  math::axpy(T(1), g, v);
  if (nesterov_) {
    math::axpy(static_cast<T>(-lr), g, p);
    this->write_param(static_cast<T>(-lr * mu_), v, T(1), p);
  } else {
    this->write_param(static_cast<T>(-lr), v, T(1), p);
  }
}

template <typename T>
void GradientDescent<T>::update_decayed(Tensor<T>& p, const Tensor<T>& g, double lr, std::int64_t t,
                                        std::vector<Tensor<T>>& slots, T keep) {
  if (mu_ != 0.0) {
    Optimizer<T>::update_decayed(p, g, lr, t, slots, keep);
    return;
  }
  this->write_param(static_cast<T>(-lr), g, keep, p);  // p = keep * p - lr * g, one pass
}

template class GradientDescent<float>;
template class GradientDescent<double>;

}  // namespace magmadnn::optimizer
