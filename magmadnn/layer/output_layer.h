/// @file output_layer.h
/// layer::OutputLayer<T>: marks the network's output. It computes nothing:
/// its out() is its input node, so adding it costs no graph node. A model
/// takes the last layer's out() as the prediction.
#pragma once

#include "magmadnn/layer/layer.h"

namespace magmadnn::layer {

template <typename T>
class OutputLayer : public Layer<T> {
 public:
  explicit OutputLayer(op::Expr<T> x, std::string name = "");
  std::string type_name() const override { return "Output"; }
};

/// v1: `layer::output<T>(act->out())`.
template <typename T>
Ref<OutputLayer<T>> output(const op::Expr<T>& x) {
  return make_layer<OutputLayer<T>>(x);
}
template <typename T>
Ref<OutputLayer<T>> output(op::Operation<T>* x) {
  return make_layer<OutputLayer<T>>(op::Expr<T>(x));
}

}  // namespace magmadnn::layer
