// Export: one emitter per layer kind, each reading the layer's own
// accessors (weights, geometry, running statistics) and writing ONNX nodes;
// a value's ONNX name is keyed by the graph node that computes it, so a
// layer finds its inputs whatever the network's branching.
#include <cmath>
#include <map>

#include "magmadnn/core/errors.h"
#include "magmadnn/io/atomic_file.h"
#include "magmadnn/layer/layers.h"
#include "magmadnn/layer/merge_layers.h"
#include "magmadnn/onnx/onnx.h"
#include "magmadnn/onnx/proto.h"

namespace magmadnn::onnx {
namespace {

using namespace detail;
using L = layer::Layer<float>;

class Exporter {
 public:
  explicit Exporter(pb::GraphProto& g) : g_(g) {}

  void layer(L& l) {
    if (auto* in = dynamic_cast<layer::InputLayer<float>*>(&l)) return input(*in);
    if (auto* fc = dynamic_cast<layer::FullyConnectedLayer<float>*>(&l)) return dense(*fc);
    if (auto* c = dynamic_cast<layer::Conv2dLayer<float>*>(&l)) return (void)conv(*c, name_of(c->get_input(), l));
    if (auto* p = dynamic_cast<layer::PoolingLayer<float>*>(&l)) return pool(*p);
    if (auto* b = dynamic_cast<layer::BatchNormLayer<float>*>(&l)) return (void)batchnorm(*b, name_of(b->get_input(), l));
    if (auto* a = dynamic_cast<layer::ActivationLayer<float>*>(&l)) return activation(*a);
    if (auto* r = dynamic_cast<layer::ResidualLayer<float>*>(&l)) return residual(*r);
    if (auto* m = dynamic_cast<layer::MergeLayer<float>*>(&l)) return merge(*m);
    if (dynamic_cast<layer::FlattenLayer<float>*>(&l)) {
      const std::string y = node("Flatten", {name_of(l.get_input(), l)}, l.get_name());
      add_int(last(), "axis", 1);
      return bind(l, y);
    }
    // Inference form: dropout is the identity; an output layer is its input.
    if (dynamic_cast<layer::DropoutLayer<float>*>(&l) || dynamic_cast<layer::OutputLayer<float>*>(&l)) {
      return bind(l, name_of(l.get_input(), l));
    }
    MAGMADNN_THROW(NotSupportedError, "ONNX export: layer " << l.get_name() << " is a " << l.type_name()
                                                            << ", a kind export does not know");
  }

  std::string name_of(const op::Expr<float>& e, const L& who) const {
    const auto it = names_.find(e.get());
    MAGMADNN_CHECK(it != names_.end(), NotSupportedError,
                   "ONNX export: the input of layer " << who.get_name() << " (" << who.type_name()
                                                      << ") is no earlier layer's output");
    return it->second;
  }
  const op::Var<float>& input_var() const { return input_; }

 private:
  void bind(const L& l, const std::string& y) { names_[l.out().get()] = y; }
  pb::NodeProto& last() { return *g_.mutable_node(g_.node_size() - 1); }

  // A node of `op` on `inputs`, named after `base`; returns its output.
  std::string node(const std::string& op, const std::vector<std::string>& inputs, const std::string& base) {
    pb::NodeProto* n = g_.add_node();
    n->set_op_type(op);
    n->set_name(base + "/" + op + "_" + std::to_string(g_.node_size()));
    for (const auto& i : inputs) n->add_input(i);
    n->add_output(n->name() + ":0");
    return n->output(0);
  }
  std::string weight(const std::string& name, const Tensor<float>& t) {
    set_tensor(*g_.add_initializer(), name, t);
    return name;
  }

  void input(layer::InputLayer<float>& in) {
    MAGMADNN_CHECK(!input_, NotSupportedError, "ONNX export: more than one Input layer (" << in.get_name() << ")");
    input_ = in.placeholder();
    names_[in.out().get()] = "input";
  }

  void dense(layer::FullyConnectedLayer<float>& fc) {
    std::string x = name_of(fc.get_input(), fc);
    if (fc.get_input()->get_output_shape().ndim() > 2) {
      x = node("Flatten", {x}, fc.get_name());
      add_int(last(), "axis", 1);
    }
    // W and b apart whichever form the layer holds them in (a folded bias
    // is unfolded: ONNX's Gemm takes C separately).
    const auto [w, b] = fc.unfolded();
    std::vector<std::string> in{x, weight(fc.get_name() + "/W", w)};
    if (fc.has_bias()) in.push_back(weight(fc.get_name() + "/b", b));
    const std::string y = node("Gemm", in, fc.get_name());
    add_int(last(), "transB", 1);
    bind(fc, y);
  }

  std::string conv(layer::Conv2dLayer<float>& c, const std::string& x) {
    const conv::ConvParams& p = c.geometry();
    std::vector<std::string> in{x, weight(c.get_name() + "/W", c.get_filter()->output())};
    if (c.get_bias() && c.get_bias()->output().size() > 0) {
      in.push_back(weight(c.get_name() + "/b", c.get_bias()->output()));
    }
    const Shape w = c.get_filter()->output().shape();
    const std::string y = node("Conv", in, c.get_name());
    add_ints(last(), "kernel_shape", {w[2], w[3]});
    add_ints(last(), "pads", {p.pad_h, p.pad_w, p.pad_h, p.pad_w});
    add_ints(last(), "strides", {p.stride_h, p.stride_w});
    add_ints(last(), "dilations", {p.dilation_h, p.dilation_w});
    add_int(last(), "group", p.groups);
    bind(c, y);
    return y;
  }

  void pool(layer::PoolingLayer<float>& l) {
    const conv::PoolParams& p = l.params();
    const bool max = p.mode == conv::PoolMode::Max;
    const std::string y = node(max ? "MaxPool" : "AveragePool", {name_of(l.get_input(), l)}, l.get_name());
    add_ints(last(), "kernel_shape", {p.kernel_h, p.kernel_w});
    add_ints(last(), "pads", {p.pad_h, p.pad_w, p.pad_h, p.pad_w});
    add_ints(last(), "strides", {p.stride_h, p.stride_w});
    if (!max) add_int(last(), "count_include_pad", p.count_include_pad ? 1 : 0);
    bind(l, y);
  }

  std::string batchnorm(layer::BatchNormLayer<float>& b, const std::string& x) {
    const std::string& n = b.get_name();
    const std::string y = node("BatchNormalization",
                               {x, weight(n + "/gamma", b.get_gamma()->output()),
                                weight(n + "/beta", b.get_beta()->output()), weight(n + "/running_mean", b.running_mean()),
                                weight(n + "/running_var", b.running_var())},
                               n);
    add_float(last(), "epsilon", static_cast<float>(b.epsilon()));
    bind(b, y);
    return y;
  }

  std::string apply(layer::activation_t f, double alpha, const std::string& x, const std::string& base) {
    switch (f) {
      case layer::SIGMOID: return node("Sigmoid", {x}, base);
      case layer::TANH: return node("Tanh", {x}, base);
      case layer::RELU: return node("Relu", {x}, base);
      case layer::SOFTPLUS: return node("Softplus", {x}, base);
      case layer::SOFTMAX: {
        const std::string y = node("Softmax", {x}, base);
        add_int(last(), "axis", -1);
        return y;
      }
      case layer::LEAKY_RELU: {
        const std::string y = node("LeakyRelu", {x}, base);
        add_float(last(), "alpha", static_cast<float>(alpha));
        return y;
      }
      case layer::GELU: {  // opset 17 has no Gelu: x * (1 + erf(x / sqrt 2)) / 2, the exact form we compute
        const auto scalar = [&](const std::string& k, float v) {
          return weight(base + "/" + k, Tensor<float>::from_vector(Shape{1}, {v}, HOST));
        };
        const std::string e = node("Erf", {node("Div", {x, scalar("sqrt2", std::sqrt(2.0f))}, base)}, base);
        const std::string h = node("Mul", {x, node("Add", {e, scalar("one", 1.0f)}, base)}, base);
        return node("Mul", {h, scalar("half", 0.5f)}, base);
      }
    }
    MAGMADNN_THROW(NotSupportedError, "ONNX export: activation " << layer::activation_name(f) << " of " << base);
  }

  void activation(layer::ActivationLayer<float>& a) {
    bind(a, apply(a.function(), a.alpha(), name_of(a.get_input(), a), a.get_name()));
  }

  void merge(layer::MergeLayer<float>& m) {
    std::vector<std::string> in;
    for (const auto& x : m.get_inputs()) in.push_back(name_of(x, m));
    const bool add = m.type_name() == "Add";
    const std::string y = node(add ? "Sum" : "Concat", in, m.get_name());
    if (!add) add_int(last(), "axis", 1);
    bind(m, y);
  }

  // conv1-bn1-relu-conv2-bn2, plus the shortcut (conv3-bn3 when it
  // projects), summed and rectified (layer/residual_layer.cpp).
  void residual(layer::ResidualLayer<float>& r) {
    const auto& parts = r.parts();
    const auto part = [&](std::size_t i) { return parts.at(i).get(); };
    const std::string x = name_of(r.get_input(), r);
    auto* c1 = dynamic_cast<layer::Conv2dLayer<float>*>(part(0));
    auto* b1 = dynamic_cast<layer::BatchNormLayer<float>*>(part(1));
    auto* c2 = dynamic_cast<layer::Conv2dLayer<float>*>(part(2));
    auto* b2 = dynamic_cast<layer::BatchNormLayer<float>*>(part(3));
    MAGMADNN_CHECK(c1 && b1 && c2 && b2, NotSupportedError, "ONNX export: residual block " << r.get_name()
                                                                << " is not conv-bn-relu-conv-bn");
    const std::string h = node("Relu", {batchnorm(*b1, conv(*c1, x))}, r.get_name());
    const std::string main = batchnorm(*b2, conv(*c2, h));
    std::string skip = x;
    if (r.projects()) {
      auto* c3 = dynamic_cast<layer::Conv2dLayer<float>*>(part(4));
      auto* b3 = dynamic_cast<layer::BatchNormLayer<float>*>(part(5));
      MAGMADNN_CHECK(c3 && b3, NotSupportedError, "ONNX export: residual block " << r.get_name()
                                                      << " projects without conv3-bn3");
      skip = batchnorm(*b3, conv(*c3, x));
    }
    bind(r, node("Relu", {node("Add", {main, skip}, r.get_name())}, r.get_name()));
  }

  pb::GraphProto& g_;
  std::map<const void*, std::string> names_;
  op::Var<float> input_;
};

// A value_info of float elements whose axis 0 is the free batch axis "N".
void describe(pb::ValueInfoProto& v, const std::string& name, const std::vector<std::int64_t>& shape) {
  v.set_name(name);
  pb::TypeProto_Tensor* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(pb::TensorProto::FLOAT);
  for (std::size_t k = 0; k < shape.size(); ++k) {
    auto* d = t->mutable_shape()->add_dim();
    if (k == 0) d->set_dim_param("N");
    else d->set_dim_value(shape[k]);
  }
}

pb::ModelProto build_model(model::NeuralNetwork<float>& net) {
  pb::ModelProto m;
  m.set_ir_version(8);  // ONNX 1.10 to 1.12: opset 17 needs IR 8
  m.set_producer_name("magmadnn");
  m.set_producer_version("2");
  pb::OperatorSetIdProto* ops = m.add_opset_import();
  ops->set_domain("");
  ops->set_version(kExportOpset);
  pb::GraphProto& g = *m.mutable_graph();
  g.set_name("magmadnn");
  const auto& layers = net.layers();
  MAGMADNN_CHECK(!layers.empty(), ValueError, "ONNX export: the network has no layers");
  Exporter e(g);
  for (const auto& l : layers) e.layer(*l);
  MAGMADNN_CHECK(e.input_var(), NotSupportedError, "ONNX export: the network has no Input layer");
  const L& top = *layers.back();
  const std::string y = e.name_of(top.out(), top);
  describe(*g.add_input(), "input", e.input_var()->pattern());
  pb::NodeProto* out = g.add_node();  // a fixed output name, whatever the last node
  out->set_op_type("Identity");
  out->set_name("output");
  out->add_input(y);
  out->add_output("output");
  describe(*g.add_output(), "output", top.out()->get_output_shape().dims());
  return m;
}

}  // namespace

std::string export_model_bytes(model::NeuralNetwork<float>& net) {
  const pb::ModelProto m = build_model(net);
  check(m, "ONNX export");
  std::string bytes;
  MAGMADNN_CHECK(m.SerializeToString(&bytes), ValueError, "ONNX export: protobuf could not serialize the model");
  return bytes;
}

void export_model(model::NeuralNetwork<float>& net, const std::string& path) {
  const std::string bytes = export_model_bytes(net);
  io::write_file_atomic(path, bytes);
}

}  // namespace magmadnn::onnx
