#include "magmadnn/optimizer/lars.h"

#include <cmath>

#include "magmadnn/core/errors.h"
#include "magmadnn/optimizer/layerwise.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::optimizer {

template <typename T>
Lars<T>::Lars(double learning_rate, LarsOptions options) : Optimizer<T>(learning_rate), o_(options) {
  MAGMADNN_CHECK(o_.momentum >= 0.0 && o_.momentum < 1.0, ValueError,
                 "Lars: momentum must be in [0, 1), got " << o_.momentum);
  MAGMADNN_CHECK(o_.weight_decay >= 0.0, ValueError, "Lars: weight decay must be >= 0, got " << o_.weight_decay);
  MAGMADNN_CHECK(o_.trust_coefficient > 0.0 && std::isfinite(o_.trust_coefficient), ValueError,
                 "Lars: trust coefficient must be > 0, got " << o_.trust_coefficient);
}

template <typename T>
double Lars<T>::trust_ratio(const Tensor<T>& w, const Tensor<T>& g) const {
  if (o_.exclude_vectors && detail::is_vector_like(w)) return 1.0;
  // Of a slice of a split tensor inside step(), the whole tensor's norms.
  double sq[2] = {detail::sum_squares(w), detail::sum_squares(g)};
  this->sum_over_slices(sq, 2);
  const double wn = std::sqrt(sq[0]);
  const double gn = std::sqrt(sq[1]);
  // You et al. leave the zero cases open; a zero weight (a fresh bias) or a
  // zero gradient takes the plain rate, never 0/0.
  if (!(wn > 0.0) || !(gn > 0.0)) return 1.0;
  return detail::guarded_ratio(o_.trust_coefficient * wn, gn + o_.weight_decay * wn);
}

template <typename T>
void Lars<T>::update(Tensor<T>& p, const Tensor<T>& g, double lr, std::int64_t, std::vector<Tensor<T>>& slots) {
  Tensor<T>& v = slots[0];
  const double decay = (o_.exclude_vectors && detail::is_vector_like(p)) ? 0.0 : o_.weight_decay;
  const double step = lr * trust_ratio(p, g);
  math::unary(UnaryOp::Scale, v, v, static_cast<T>(o_.momentum));
  if (decay > 0.0) {
    // v += step * (g + decay * w), in two passes with no temporary.
    math::axpy(static_cast<T>(step * decay), p, v);
  }
  math::axpy(static_cast<T>(step), g, v);
  this->write_param(T(-1), v, T(1), p);
}

template class Lars<float>;
template class Lars<double>;

}  // namespace magmadnn::optimizer
