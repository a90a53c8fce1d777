#include "magmadnn/optimizer/lamb.h"

#include <cmath>

#include "magmadnn/core/errors.h"
#include "magmadnn/optimizer/layerwise.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::optimizer {

template <typename T>
Lamb<T>::Lamb(double learning_rate, LambOptions options) : Optimizer<T>(learning_rate), o_(options) {
  MAGMADNN_CHECK(o_.beta1 >= 0 && o_.beta1 < 1 && o_.beta2 >= 0 && o_.beta2 < 1, ValueError,
                 "Lamb: betas must be in [0, 1), got " << o_.beta1 << " and " << o_.beta2);
  MAGMADNN_CHECK(o_.epsilon > 0.0, ValueError, "Lamb: epsilon must be > 0, got " << o_.epsilon);
  MAGMADNN_CHECK(o_.weight_decay >= 0.0, ValueError, "Lamb: weight decay must be >= 0, got " << o_.weight_decay);
}

template <typename T>
void Lamb<T>::update(Tensor<T>& p, const Tensor<T>& g, double lr, std::int64_t t, std::vector<Tensor<T>>& slots) {
  Tensor<T>& m = slots[0];
  Tensor<T>& v = slots[1];
  math::unary(UnaryOp::Scale, m, m, static_cast<T>(o_.beta1));
  math::axpy(static_cast<T>(1.0 - o_.beta1), g, m);
  {
    const Tensor<T> g2 = math::product(g, g);
    math::unary(UnaryOp::Scale, v, v, static_cast<T>(o_.beta2));
    math::axpy(static_cast<T>(1.0 - o_.beta2), g2, v);
  }
  const double bc1 = 1.0 - std::pow(o_.beta1, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(o_.beta2, static_cast<double>(t));
  // u = (m / bc1) / (sqrt(v) / sqrt(bc2) + eps) + lambda * w
  Tensor<T> u = math::unary(UnaryOp::Sqrt, v);
  math::unary(UnaryOp::Scale, u, u, static_cast<T>(1.0 / std::sqrt(bc2)));
  math::unary(UnaryOp::AddScalar, u, u, static_cast<T>(o_.epsilon));
  math::div(m, u, u);
  math::unary(UnaryOp::Scale, u, u, static_cast<T>(1.0 / bc1));
  const bool excluded = o_.exclude_vectors && detail::is_vector_like(p);
  if (!excluded && o_.weight_decay > 0.0) math::axpy(static_cast<T>(o_.weight_decay), p, u);
  if (excluded) {
    last_trust_ = 1.0;
  } else {
    // Of a slice of a split tensor, the whole tensor's norms (summed over the slices).
    double sq[2] = {detail::sum_squares(p), detail::sum_squares(u)};
    this->sum_over_slices(sq, 2);
    last_trust_ = detail::guarded_ratio(std::sqrt(sq[0]), std::sqrt(sq[1]));
  }
  this->write_param(static_cast<T>(-lr * last_trust_), u, T(1), p);
}

template class Lamb<float>;
template class Lamb<double>;

}  // namespace magmadnn::optimizer
