/// @file input_layer.h
/// layer::InputLayer<T>: where batches enter the network.
///
/// The layer's output is a placeholder of pattern {-1, d1, d2, ...}, so the
/// network takes batches of any size; the model (or the user) feeds them
/// with placeholder()->set_value(batch).
///  - input(x) with x an op::var (MagmaDNN v1 passes `x_batch`, a variable
///    of shape {batch, ...}): x only supplies the sample shape and the memory
///    type; the layer makes its own placeholder in x's memory and sets it to
///    a copy of x's current value, so the network's shapes are known at once.
///    Later writes to x are not seen by the network.
///  - input(p) with p an op::placeholder: p itself is the output. If p has
///    no value yet, layers with parameters cannot size themselves on it and
///    say so; give it a value first, or use input<T>(pattern).
///  - input<T>({-1, 784}): a new placeholder of that pattern, set to zeros
///    with batch size 1 until the first batch arrives.
#pragma once

#include <cstdint>
#include <vector>

#include "magmadnn/layer/layer.h"

namespace magmadnn::layer {

template <typename T>
class InputLayer : public Layer<T> {
 public:
  /// From a variable or a placeholder (see the file comment). ValueError for
  /// any other expression, naming it.
  explicit InputLayer(op::Expr<T> x, std::string name = "");
  /// A new placeholder of `pattern` (-1 where any size is allowed) in `mem`.
  InputLayer(std::vector<std::int64_t> pattern, memory_t mem, std::string name = "");

  std::string type_name() const override { return "Input"; }
  /// The placeholder that receives the batches.
  const op::Var<T>& placeholder() const noexcept { return placeholder_; }

 private:
  op::Var<T> placeholder_;
};

/// v1: `layer::input(x_batch)` / `layer::input<T>(x_batch)`.
template <typename T>
Ref<InputLayer<T>> input(const op::Expr<T>& x) {
  return make_layer<InputLayer<T>>(x);
}
template <typename T>
Ref<InputLayer<T>> input(op::Operation<T>* x) {
  return make_layer<InputLayer<T>>(op::Expr<T>(x));
}
/// `layer::input<float>({-1, 784})`.
template <typename T>
Ref<InputLayer<T>> input(std::vector<std::int64_t> pattern, memory_t mem = MANAGED) {
  return make_layer<InputLayer<T>>(std::move(pattern), mem);
}

}  // namespace magmadnn::layer
