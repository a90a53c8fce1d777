// The compute graph (magmadnn.op), the layers (magmadnn.layer) and the
// optimizers' minimize (magmadnn.optimizer), as in the papers' and slides'
// programs: op.var / op.add / op.matmul / op.pow, Expr.eval(), layers built
// on the output of the layer before. float32 graphs.
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "common.h"
#include "magmadnn/compute/compute.h"
#include "magmadnn/layer/layers.h"
#include "magmadnn/optimizer/factory.h"
#include "magmadnn/optimizer/optimizer_base.h"

namespace magmadnn::python {
namespace {

using Expr = op::Expr<float>;
using LayerPtr = std::shared_ptr<layer::Layer<float>>;

// An op argument: an Expr, a Layer (its output) or an array / Tensor (a
// constant sharing its memory).
Expr expr_arg(nb::handle obj, const char* arg) {
  if (nb::isinstance<Expr>(obj)) return nb::cast<Expr>(obj);
  if (nb::isinstance<layer::Layer<float>>(obj)) return nb::cast<layer::Layer<float>&>(obj).out();
  MAGMADNN_CHECK(!obj.is_none(), ValueError, arg << ": expected an Expr, a Layer or an array, got None");
  Tensor<float> t = tensor_arg<float>(obj, arg, true);
  return op::constant<float>(arg, t);
}

// A view of `t` (shares storage), as a Python Tensor.
PyTensor share(const Tensor<float>& t) { return PyTensor{t.view(t.shape())}; }

layer::Dims2 dims2(nb::handle obj, const char* arg) {
  if (PyLong_Check(obj.ptr())) {
    const auto v = nb::cast<std::int64_t>(obj);
    return {v, v};
  }
  MAGMADNN_CHECK(PySequence_Check(obj.ptr()) && nb::len(obj) == 2, ValueError,
                 arg << ": expected an int or a pair of ints, got " << nb::str(nb::repr(obj)).c_str());
  return {nb::cast<std::int64_t>(obj[0]), nb::cast<std::int64_t>(obj[1])};
}

void bind_ops(nb::module_& m) {
  nb::class_<Expr>(m, "Expr",
                   "A node of the compute graph (C++ op::Expr<float>): built by magmadnn.op functions, evaluated "
                   "by eval().")
      .def("eval", [](Expr& e, bool recompute) { return share(*e->eval(recompute)); },
           nb::arg("recompute") = false, nb::call_guard<nb::gil_scoped_release>(),
           "Runs the graph forward (only what changed since the last eval) and returns the node's value,\n"
           "a Tensor sharing the node's output memory (valid until the next eval).")
      .def_prop_ro("name", [](const Expr& e) { return e->get_name(); })
      .def_prop_ro("value", [](const Expr& e) {
        return share(op::as_variable(e, "Expr.value").value());
      }, "A variable's value, a Tensor sharing its memory (writes through it change the variable).")
      .def("set_value", [](const Expr& e, nb::handle v) {
        op::as_variable(e, "Expr.set_value").set_value(tensor_arg<float>(v, "value", true));
      }, nb::arg("value"), "Copies `value` (an array or Tensor) into a variable; a variable keeps its shape.")
      .def("__add__", [](const Expr& a, nb::handle b) { return op::add(a, expr_arg(b, "other")); })
      .def("__sub__", [](const Expr& a, nb::handle b) { return op::sub(a, expr_arg(b, "other")); })
      .def("__matmul__", [](const Expr& a, nb::handle b) { return op::matmul(a, expr_arg(b, "other")); })
      .def("__pow__", [](const Expr& a, double p) { return op::pow(a, p); })
      .def("__repr__", [](const Expr& e) { return "<magmadnn.Expr " + e->kind() + " '" + e->get_name() + "'>"; });

  nb::module_ op = m.def_submodule("op", "The compute graph (C++ op::): leaves, arithmetic, activations.");
  op.def("var", [](const std::string& name, nb::handle shape, nb::handle fill, const std::string& memory) -> Expr {
    if (nb::isinstance<PyTensor>(shape) || nb::hasattr(shape, "__dlpack__") || PyObject_CheckBuffer(shape.ptr())) {
      Tensor<float> t = tensor_arg<float>(shape, "value", false);
      return op::var<float>(name, &t);  // shares the array's memory
    }
    return op::var<float>(name, shape_from_py(shape, "shape"), filler_from_py<float>(fill),
                          memory_from_py(memory, "memory"));
  }, nb::arg("name"), nb::arg("shape"), nb::arg("fill").none() = nb::none(), nb::arg("memory") = "host",
  "A trainable variable: of `shape` filled by `fill` (see Tensor), or over an existing float32 Tensor or\n"
  "array (sharing its memory: writes through either are seen by both).");
  op.def("constant", [](const std::string& name, nb::handle value) {
    return Expr(op::constant<float>(name, tensor_arg<float>(value, "value", true)));
  }, nb::arg("name"), nb::arg("value"), "A constant leaf holding a copy of `value` (optimizers do not train it).");
  op.def("placeholder", [](const std::string& name, std::vector<std::int64_t> shape) {
    return Expr(op::placeholder<float>(name, std::move(shape), HOST));
  }, nb::arg("name"), nb::arg("shape"), "An input whose shape (-1: any size) is fixed by set_value().");
  op.def("add", [](nb::handle a, nb::handle b) { return op::add(expr_arg(a, "a"), expr_arg(b, "b")); },
         nb::arg("a"), nb::arg("b"), "a + b elementwise (shapes must match, or b broadcast as a bias).");
  op.def("sub", [](nb::handle a, nb::handle b) { return op::sub(expr_arg(a, "a"), expr_arg(b, "b")); },
         nb::arg("a"), nb::arg("b"));
  op.def("product", [](nb::handle a, nb::handle b) { return op::product(expr_arg(a, "a"), expr_arg(b, "b")); },
         nb::arg("a"), nb::arg("b"), "a * b elementwise.");
  op.def("matmul", [](nb::handle a, nb::handle b) { return op::matmul(expr_arg(a, "a"), expr_arg(b, "b")); },
         nb::arg("a"), nb::arg("b"), "The matrix product a b (magmadnn.ShapeError naming both shapes if they do not fit).");
  op.def("pow", [](nb::handle x, double p) { return op::pow(expr_arg(x, "x"), p); }, nb::arg("x"), nb::arg("p"),
         "x^p elementwise for a number p.");
  op.def("sigmoid", [](nb::handle x) { return op::sigmoid(expr_arg(x, "x")); }, nb::arg("x"));
  op.def("relu", [](nb::handle x) { return op::relu(expr_arg(x, "x")); }, nb::arg("x"));
  op.def("tanh", [](nb::handle x) { return op::tanh(expr_arg(x, "x")); }, nb::arg("x"));
  op.def("softmax", [](nb::handle x) { return op::softmax(expr_arg(x, "x")); }, nb::arg("x"));
  op.def("reduce_sum", [](nb::handle x) { return op::reduce_sum(expr_arg(x, "x")); }, nb::arg("x"));
  op.def("mean", [](nb::handle x) { return op::mean(expr_arg(x, "x")); }, nb::arg("x"));
}

void bind_layers(nb::module_& m) {
  nb::class_<layer::Layer<float>>(m, "Layer",
                                  "One block of a network (C++ layer::Layer<float>); built on the output of the "
                                  "layer before it (pass the layer or its out()).")
      .def("out", &layer::Layer<float>::out, "The layer's output node.")
      .def_prop_ro("name", &layer::Layer<float>::get_name)
      .def_prop_ro("type_name", &layer::Layer<float>::type_name)
      .def("__repr__", [](const layer::Layer<float>& l) { return "<magmadnn.Layer " + l.type_name() + " '" + l.get_name() + "'>"; });

  nb::module_ l = m.def_submodule("layer", "The layers (C++ layer::), MagmaDNN v1's factory names.");
  l.def("reset_names", &layer::reset_layer_names,
        "Restarts the default layer names (fullyconnected_1, ...), so a network built again gets the\n"
        "names it had, which its checkpoints are keyed by.");
  l.def("input", [](std::vector<std::int64_t> shape) -> LayerPtr { return layer::input<float>(std::move(shape)).ptr(); },
        nb::arg("shape"), "The network's input, e.g. input((-1, 784)) or input((-1, 1, 28, 28)); -1: the batch axis.");
  l.def("fullyconnected", [](nb::handle x, std::int64_t units, bool use_bias) -> LayerPtr {
    return layer::fullyconnected(expr_arg(x, "x"), units, use_bias).ptr();
  }, nb::arg("x"), nb::arg("units"), nb::arg("use_bias") = true, "y = x W^T + b with `units` outputs (Glorot init).");
  l.def("activation", [](nb::handle x, const std::string& func, double alpha) -> LayerPtr {
    return layer::activation(expr_arg(x, "x"), layer::activation_from_name(func), alpha).ptr();
  }, nb::arg("x"), nb::arg("func"), nb::arg("alpha") = 0.01,
  "An activation by name: sigmoid, tanh, relu, softmax, leaky_relu, gelu, softplus.");
  l.def("flatten", [](nb::handle x) -> LayerPtr { return layer::flatten(expr_arg(x, "x")).ptr(); }, nb::arg("x"));
  l.def("conv2d", [](nb::handle x, nb::handle filter, std::int64_t out_channels, nb::handle padding, nb::handle strides,
                     bool use_bias) -> LayerPtr {
    layer::Dims2 f = dims2(filter, "filter_shape");
    layer::Dims2 pad{0, 0};
    if (nb::isinstance<nb::str>(padding)) {
      const auto p = nb::cast<std::string>(padding);
      MAGMADNN_CHECK(p == "same" || p == "valid", ValueError, "padding: expected 'same', 'valid' or ints, got '" << p << "'");
      pad = layer::padding_for(p == "same" ? layer::SAME : layer::VALID, f, {1, 1});
    } else {
      pad = dims2(padding, "padding");
    }
    return layer::conv2d(expr_arg(x, "x"), f, out_channels, pad, dims2(strides, "strides"), {1, 1}, true, use_bias).ptr();
  }, nb::arg("x"), nb::arg("filter_shape") = nb::make_tuple(3, 3), nb::arg("out_channels") = 1,
  nb::arg("padding") = nb::make_tuple(0, 0), nb::arg("strides") = nb::make_tuple(1, 1), nb::arg("use_bias") = false,
  "A 2-D convolution of an {N, C, H, W} input.");
  l.def("pooling", [](nb::handle x, nb::handle filter, nb::handle padding, nb::handle strides, const std::string& mode) -> LayerPtr {
    MAGMADNN_CHECK(mode == "max" || mode == "average", ValueError, "mode: expected 'max' or 'average', got '" << mode << "'");
    return layer::pooling(expr_arg(x, "x"), dims2(filter, "filter_shape"), dims2(padding, "padding"),
                          dims2(strides, "strides"), mode == "max" ? MAX_POOL : AVERAGE_POOL).ptr();
  }, nb::arg("x"), nb::arg("filter_shape") = nb::make_tuple(2, 2), nb::arg("padding") = nb::make_tuple(0, 0),
  nb::arg("strides") = nb::make_tuple(1, 1), nb::arg("mode") = "max");
  l.def("dropout", [](nb::handle x, float rate) -> LayerPtr { return layer::dropout(expr_arg(x, "x"), rate).ptr(); },
        nb::arg("x"), nb::arg("rate") = 0.2f);
  l.def("batchnorm", [](nb::handle x) -> LayerPtr { return layer::batchnorm(expr_arg(x, "x")).ptr(); }, nb::arg("x"));
  l.def("output", [](nb::handle x) -> LayerPtr { return layer::output(expr_arg(x, "x")).ptr(); }, nb::arg("x"));
}

void bind_optimizers(nb::module_& m) {
  nb::module_ o = m.def_submodule("optimizer", "Optimizers (C++ optimizer::) and the slides' minimize.");
  nb::class_<optimizer::Optimizer<float>>(o, "Optimizer", "An optimizer (C++ optimizer::Optimizer<float>).")
      .def("minimize", [](optimizer::Optimizer<float>& opt, const Expr& loss, std::vector<Expr> vars) {
        nb::gil_scoped_release release;
        opt.minimize(loss, vars);
      }, nb::arg("loss"), nb::arg("vars"), "One optimization step on `loss` with respect to `vars`.")
      .def_prop_rw("learning_rate", &optimizer::Optimizer<float>::base_learning_rate,
                   &optimizer::Optimizer<float>::set_learning_rate);
  o.def("make", [](const std::string& kind, double learning_rate, double momentum) {
    optimizer::OptimizerSettings s;
    s.kind = optimizer::kind_from_name(kind);
    s.learning_rate = learning_rate;
    s.momentum = momentum;
    return optimizer::make<float>(s);
  }, nb::arg("kind") = "sgd", nb::arg("learning_rate") = 0.05, nb::arg("momentum") = 0.0,
  "An optimizer by name (sgd, adam, adagrad, rmsprop, adamw, lars, lamb).");
  o.def("GradientDescent", [](double lr, double momentum) {
    optimizer::OptimizerSettings s;
    s.learning_rate = lr;
    s.momentum = momentum;
    return optimizer::make<float>(s);
  }, nb::arg("learning_rate"), nb::arg("momentum") = 0.0, "The slides' GradientDescent(learning_rate).");
}

}  // namespace

void bind_graph(nb::module_& m) {
  bind_ops(m);
  bind_layers(m);
  bind_optimizers(m);
}

}  // namespace magmadnn::python
