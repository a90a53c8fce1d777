#include "magmadnn/compute/loss.h"

#include "magmadnn/compute/grad_utils.h"

namespace magmadnn::op {

template <typename T>
LossNode<T>::LossNode(Kind kind, OpPtr<T> a, OpPtr<T> b) : Operation<T>("", {std::move(a), std::move(b)}), kind_(kind) {
  this->name_ = this->kind();
}

template <typename T>
std::string LossNode<T>::kind() const {
  switch (kind_) {
    case Kind::CrossEntropy: return "crossentropy";
    case Kind::SoftmaxCrossEntropy: return "softmax_crossentropy";
    default: return "mse";
  }
}

template <typename T>
Shape LossNode<T>::infer_shape(const std::vector<Shape>& in) const {
  MAGMADNN_CHECK(in[0] == in[1], ShapeError,
                 kind() << ": shapes " << in[0] << " and " << in[1] << " must be equal");
  if (kind_ != Kind::MSE) {
    MAGMADNN_CHECK(in[0].ndim() == 2, ShapeError, kind() << ": needs {batch, classes}, got " << in[0]);
  }
  return Shape{1};
}

template <typename T>
void LossNode<T>::forward() {
  const Tensor<T>& a = this->in(0);
  const Tensor<T>& b = this->in(1);
  infer_shape({a.shape(), b.shape()});
  T value;
  switch (kind_) {
    case Kind::CrossEntropy: {  // a = labels, b = probabilities
      Tensor<T> t = math::log(b);
      math::product(t, a, t);
      value = -math::sum_all(t) / static_cast<T>(a.shape()[0]);
      break;
    }
    case Kind::SoftmaxCrossEntropy: {  // a = logits, b = labels
      if (saved_.shape() != a.shape()) saved_ = Tensor<T>(a.shape(), a.get_memory_type(), a.get_device_id());
      double dot = 0;
      if (math::softmax_xent(a, b, saved_, dot)) {
        value = static_cast<T>(-dot / static_cast<double>(a.shape()[0]));
        break;
      }
      math::softmax(a, saved_, true);
      Tensor<T> t = math::product(saved_, b);
      value = -math::sum_all(t) / static_cast<T>(a.shape()[0]);
      break;
    }
    default: {
      saved_ = math::sub(a, b);
      Tensor<T> t = math::product(saved_, saved_);
      value = math::sum_all(t) / static_cast<T>(a.size());
    }
  }
  Tensor<T>& out = this->output_buffer(Shape{1}, a);
  math::fill(out, value);
}

template <typename T>
void LossNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  const Tensor<T>& a = this->in(0);
  const Tensor<T>& b = this->in(1);
  const T g0 = detail::scalar_of(g);
  switch (kind_) {
    case Kind::CrossEntropy: {
      const T s = -g0 / static_cast<T>(a.shape()[0]);
      if (needed[0]) gin[0] = math::scale(math::log(b), s);
      if (needed[1]) gin[1] = math::scale(math::div(a, b), s);
      break;
    }
    case Kind::SoftmaxCrossEntropy: {
      const T s = g0 / static_cast<T>(a.shape()[0]);
      if (needed[0]) {
        // d/dz of -sum_j y_j log softmax(z)_j = softmax(z) * sum_j y_j - y.
        Tensor<T> d(a.shape(), a.get_memory_type(), a.get_device_id());
        if (!math::softmax_xent_backward(saved_, b, d, s)) {
          math::unary(UnaryOp::Exp, saved_, d);
          math::product(d, math::sum(b, -1, true), d);
          math::sub(d, b, d);
          math::unary(UnaryOp::Scale, d, d, s);
        }
        gin[0] = std::move(d);
      }
      if (needed[1]) gin[1] = math::scale(saved_, -s);
      break;
    }
    default: {
      const T s = T(2) * g0 / static_cast<T>(a.size());
      if (needed[0]) gin[0] = math::scale(saved_, s);
      if (needed[1]) gin[1] = math::scale(saved_, -s);
    }
  }
}

template class LossNode<float>;
template class LossNode<double>;

}  // namespace magmadnn::op
