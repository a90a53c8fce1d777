/// @file flatten_layer.h
/// layer::FlattenLayer<T>: {N, d1, d2, ...} -> {N, d1 * d2 * ...}, keeping
/// the batch axis free. The output shares the input's storage (no copy).
#pragma once

#include "magmadnn/layer/layer.h"

namespace magmadnn::layer {

template <typename T>
class FlattenLayer : public Layer<T> {
 public:
  explicit FlattenLayer(op::Expr<T> x, std::string name = "");
  std::string type_name() const override { return "Flatten"; }
};

/// v1: `layer::flatten<T>(x)`.
template <typename T>
Ref<FlattenLayer<T>> flatten(const op::Expr<T>& x) {
  return make_layer<FlattenLayer<T>>(x);
}
template <typename T>
Ref<FlattenLayer<T>> flatten(op::Operation<T>* x) {
  return make_layer<FlattenLayer<T>>(op::Expr<T>(x));
}

}  // namespace magmadnn::layer
