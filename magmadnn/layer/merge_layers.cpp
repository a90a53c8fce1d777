#include "magmadnn/layer/merge_layers.h"

#include "magmadnn/compute/arithmetic.h"
#include "magmadnn/compute/shape_ops.h"

namespace magmadnn::layer {

template <typename T>
MergeLayer<T>::MergeLayer(std::vector<op::Expr<T>> xs, std::string name, const std::string& prefix)
    : Layer<T>(std::move(name), xs.empty() ? op::Expr<T>() : xs.front(), prefix), inputs_(std::move(xs)) {
  MAGMADNN_CHECK(inputs_.size() >= 2, ValueError,
                 "layer::" << prefix << " " << this->name_ << ": needs at least two inputs, got " << inputs_.size());
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    MAGMADNN_CHECK(inputs_[i], ValueError,
                   "layer::" << prefix << " " << this->name_ << ": input " << i << " is an empty handle");
  }
}

template <typename T>
std::vector<Shape> MergeLayer<T>::input_shapes() const {
  std::vector<Shape> shapes;
  for (const auto& x : inputs_) shapes.push_back(x->get_output_shape());
  return shapes;
}

template <typename T>
AddLayer<T>::AddLayer(std::vector<op::Expr<T>> xs, std::string name)
    : MergeLayer<T>(std::move(xs), std::move(name), "add") {
  const std::vector<Shape> s = this->input_shapes();
  for (std::size_t i = 1; i < s.size(); ++i) {
    MAGMADNN_CHECK(s[i] == s[0], ShapeError,
                   "layer::add " << this->name_ << ": input 0 is " << s[0] << " but input " << i << " is " << s[i]
                                 << " (an add needs equal shapes)");
  }
  const auto& in = this->inputs_;
  this->set_output(in.size() == 2 ? op::add(in[0], in[1]) : op::add_n(in));
}

template <typename T>
ConcatLayer<T>::ConcatLayer(std::vector<op::Expr<T>> xs, std::string name)
    : MergeLayer<T>(std::move(xs), std::move(name), "concat") {
  const std::vector<Shape> s = this->input_shapes();
  MAGMADNN_CHECK(s[0].ndim() >= 2, ShapeError,
                 "layer::concat " << this->name_ << ": input 0 is " << s[0] << ", which has no channel axis");
  for (std::size_t i = 1; i < s.size(); ++i) {
    bool ok = s[i].ndim() == s[0].ndim();
    for (std::int64_t k = 0; ok && k < s[0].ndim(); ++k) ok = k == 1 || s[i][k] == s[0][k];
    MAGMADNN_CHECK(ok, ShapeError,
                   "layer::concat " << this->name_ << ": input 0 is " << s[0] << " but input " << i << " is " << s[i]
                                    << " (a concat needs equal sizes on every axis but the channels, axis 1)");
  }
  this->set_output(op::concat(this->inputs_, 1));
}

template class MergeLayer<float>;
template class MergeLayer<double>;
template class AddLayer<float>;
template class AddLayer<double>;
template class ConcatLayer<float>;
template class ConcatLayer<double>;

}  // namespace magmadnn::layer
