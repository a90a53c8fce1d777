#include "magmadnn/layer/input_layer.h"

namespace magmadnn::layer {

template <typename T>
InputLayer<T>::InputLayer(op::Expr<T> x, std::string name) : Layer<T>(std::move(name), op::Expr<T>(), "input") {
  MAGMADNN_CHECK(x, ValueError, "layer::input: empty input handle");
  auto leaf = std::dynamic_pointer_cast<op::Variable<T>>(x.ptr());
  MAGMADNN_CHECK(leaf != nullptr, ValueError,
                 "layer::input: expects an op::var or op::placeholder, got the expression " << x->to_string());
  if (leaf->role() == op::Variable<T>::Role::Placeholder) {
    placeholder_ = op::Var<T>(leaf);
  } else {
    // A data variable fixes the sample shape only; the batch axis is left
    // free so a partial last batch or a single sample needs no new graph.
    const Tensor<T>& v = leaf->output();
    MAGMADNN_CHECK(v.ndim() >= 1, ShapeError, "layer::input: variable " << leaf->get_name() << " has no axes");
    std::vector<std::int64_t> pattern = v.shape().dims();
    pattern[0] = -1;
    placeholder_ = op::placeholder<T>(this->name_ + "/x", pattern, v.get_memory_type(), v.get_device_id());
    placeholder_->set_value(v);
  }
  this->set_output(placeholder_);
}

template <typename T>
InputLayer<T>::InputLayer(std::vector<std::int64_t> pattern, memory_t mem, std::string name)
    : Layer<T>(std::move(name), op::Expr<T>(), "input") {
  MAGMADNN_CHECK(!pattern.empty(), ShapeError, "layer::input: the input pattern has no axes");
  placeholder_ = op::placeholder<T>(this->name_ + "/x", pattern, mem);
  std::vector<std::int64_t> initial = pattern;
  for (auto& d : initial) d = d < 0 ? 1 : d;
  placeholder_->set_value(Tensor<T>(Shape(initial), {ZERO}, mem));
  this->set_output(placeholder_);
}

template class InputLayer<float>;
template class InputLayer<double>;

}  // namespace magmadnn::layer
