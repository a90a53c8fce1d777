// The folded-bias fully connected node (SHM-Learn-Dist §4).
#include "magmadnn/compute/folded_linear.h"

#include <utility>

#include "magmadnn/tensor/math.h"

namespace magmadnn::op {

template <typename T>
FoldedLinearNode<T>::FoldedLinearNode(OpPtr<T> x, OpPtr<T> wb, UnaryOp act)
    : Operation<T>("folded_linear", {std::move(x), std::move(wb)}), act_(act) {
  LinearNode<T>::check_supported("folded_linear", act);
  this->name_ = kind();
}

template <typename T>
std::string FoldedLinearNode<T>::kind() const {
  return LinearNode<T>::kind_of("folded_linear", act_);
}

template <typename T>
Shape FoldedLinearNode<T>::infer_shape(const std::vector<Shape>& in) const {
  const Shape& x = in[0];
  const Shape& wb = in[1];
  MAGMADNN_CHECK(x.ndim() == 2 && wb.ndim() == 2 && wb[1] == x[1] + 1, ShapeError,
                 "folded_linear: input " << x << " and folded weight " << wb
                                         << " do not fit (need {batch, in} and {out, in + 1}: [b | W])");
  return Shape{x[0], wb[0]};
}

template <typename T>
void FoldedLinearNode<T>::forward() {
  const Tensor<T>& x = this->in(0);
  Tensor<T>& out = this->output_buffer(infer_shape({x.shape(), this->in(1).shape()}), x);
  const Shape shifted{x.shape()[0], x.shape()[1] + 1};
  if (shifted_.shape() != shifted || shifted_.get_memory_type() != x.get_memory_type() ||
      shifted_.get_device_id() != x.get_device_id()) {
    shifted_ = Tensor<T>(shifted, x.get_memory_type(), x.get_device_id());
  }
  math::shift_right(x, T(1), shifted_);  // ShiftRight: [1, x]
  math::linear(shifted_, this->in(1), static_cast<const Tensor<T>*>(nullptr), act_, T(0), out);
}

template <typename T>
void FoldedLinearNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  std::vector<bool> applied(needed.size(), false);
  backward_into(g, needed, gin, std::vector<const typename Operation<T>::UpdateTarget*>(needed.size()), applied);
}

template <typename T>
void FoldedLinearNode<T>::backward_into(const Tensor<T>& g, const std::vector<bool>& needed,
                                        std::vector<Tensor<T>>& gin,
                                        const std::vector<const typename Operation<T>::UpdateTarget*>& targets,
                                        std::vector<bool>& applied) {
  Tensor<T> dz;
  if (act_ == UnaryOp::Identity) {
    dz = g.view(g.shape());  // read-only alias; never handed out
  } else {
    dz = Tensor<T>(g.shape(), g.get_memory_type(), g.get_device_id());
    math::unary_backward(act_, this->output_, this->output_, g, dz, T(0));
  }
  const Tensor<T>& wb = this->in(1);
  if (needed[0]) {
    // dz ShiftLeft(Wb): Wb read in place without its bias column (a copy
    // of dz Wb realigned afterwards, as the seed does, measured 3x slower
    // for 528 -> 10 at batch 256). Reads Wb before any update of it.
    gin[0] = Tensor<T>(this->in(0).shape(), g.get_memory_type(), g.get_device_id());
    math::matmul_drop_first_col(dz, wb, gin[0]);
  }
  if (!needed[1]) return;
  // dWb = dz^T [1, x]: its first column is the bias gradient.
  if (targets[1] != nullptr && wb.size() >= kFoldUpdateMinWeights) {
    const auto& t = *targets[1];
    math::matmul(t.alpha, dz, true, shifted_, false, t.beta, *t.dst);
    applied[1] = true;
  } else {
    gin[1] = math::matmul(dz, shifted_, true, false);
  }
}

template class FoldedLinearNode<float>;
template class FoldedLinearNode<double>;

}  // namespace magmadnn::op
