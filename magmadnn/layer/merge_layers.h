/// @file merge_layers.h
/// Layers that join branches of a network: layer::AddLayer<T> (the sum of
/// its inputs, as a residual block ends) and layer::ConcatLayer<T> (its
/// inputs joined along the channel axis, as an inception module ends). With
/// them a network is a graph: a layer may read any earlier layer's output.
///
///   auto a   = layer::conv2d<float>(x, {3, 3}, 64, {1, 1});
///   auto b   = layer::conv2d<float>(x, {1, 1}, 64);
///   auto sum = layer::add<float>({a->out(), b->out()});      // {N, 64, H, W}
///   auto cat = layer::concat<float>({a->out(), b->out()});   // {N, 128, H, W}
///
/// Requires at least two inputs, all of known shape when built. AddLayer:
/// equal shapes (no broadcasting). ConcatLayer: the same number of axes
/// (at least two) and equal sizes on every axis but axis 1. Otherwise
/// ShapeError naming the layer, the two inputs that disagree (by position)
/// and their shapes. Guarantees: no parameters; the gradient of each input is
/// the output's (add) or its own slice of it (concat).
///
/// get_input() is the first input; get_inputs() all of them. Train and eval
/// mode change nothing here, so set_training touches no other layer's nodes.
#pragma once

#include <vector>

#include "magmadnn/layer/layer.h"

namespace magmadnn::layer {

template <typename T>
class MergeLayer : public Layer<T> {
 public:
  const std::vector<op::Expr<T>>& get_inputs() const noexcept { return inputs_; }
  void set_training(bool training) override { this->training_ = training; }

 protected:
  MergeLayer(std::vector<op::Expr<T>> xs, std::string name, const std::string& prefix);
  /// The known shapes of the inputs (ShapeError naming this layer otherwise).
  std::vector<Shape> input_shapes() const;
  std::vector<op::Expr<T>> inputs_;
};

template <typename T>
class AddLayer : public MergeLayer<T> {
 public:
  explicit AddLayer(std::vector<op::Expr<T>> xs, std::string name = "");
  std::string type_name() const override { return "Add"; }
};

template <typename T>
class ConcatLayer : public MergeLayer<T> {
 public:
  explicit ConcatLayer(std::vector<op::Expr<T>> xs, std::string name = "");
  std::string type_name() const override { return "Concat"; }
};

/// `layer::add<float>({a, b})`: a + b + ...
template <typename T>
Ref<AddLayer<T>> add(std::vector<op::Expr<T>> xs, std::string name = "") {
  return make_layer<AddLayer<T>>(std::move(xs), std::move(name));
}
/// `layer::concat<float>({a, b})`: the inputs' channels, in order.
template <typename T>
Ref<ConcatLayer<T>> concat(std::vector<op::Expr<T>> xs, std::string name = "") {
  return make_layer<ConcatLayer<T>>(std::move(xs), std::move(name));
}

}  // namespace magmadnn::layer
