// A gated linear unit: y = (x W^T + b) * sigmoid(x V^T + c).
#pragma once

#include <magmadnn.h>

namespace mylayers {

using namespace magmadnn;

template <typename T>
class GatedLinearLayer : public layer::Layer<T> {
 public:
  // The layer is built on the output node of the layer before it.
  GatedLinearLayer(op::Expr<T> x, std::int64_t units) : layer::Layer<T>("", std::move(x), "gatedlinear") {
    // Parameters are sized from the input's (known) sample shape.
    const Shape in = this->known_input_shape();
    MAGMADNN_CHECK(in.ndim() == 2, ShapeError, "gatedlinear: needs {batch, features}, got " << in);
    // add_weight names them "<layer name>/<key>", creates them in the
    // memory of the network's input, and registers them for training.
    auto W = this->add_weight("W", Shape{units, in[1]}, {GLOROT});
    auto b = this->add_weight("b", Shape{units}, {ZERO});
    auto V = this->add_weight("V", Shape{units, in[1]}, {GLOROT});
    auto c = this->add_weight("c", Shape{units}, {ZERO});
    // The output is an ordinary graph expression: autodiff does the rest.
    this->set_output(op::product(op::linear(this->input_, W, b), op::sigmoid(op::linear(this->input_, V, c))));
  }

  std::string type_name() const override { return "GatedLinear"; }
};

// A factory in the style of the built-in ones.
template <typename T>
layer::Ref<GatedLinearLayer<T>> gatedlinear(const op::Expr<T>& x, std::int64_t units) {
  return layer::make_layer<GatedLinearLayer<T>>(x, units);
}

}  // namespace mylayers
