// The values an import works with: constants from TensorProtos, and the
// node context each operator's builder reads.
#include <cstring>
#include <sstream>

#include "magmadnn/compute/variable.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/onnx/import_detail.h"

namespace magmadnn::onnx::detail {

std::int64_t Const::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

namespace {

template <typename S>
void read_raw(const std::string& raw, std::vector<double>& out, std::int64_t n, const std::string& what) {
  MAGMADNN_CHECK(static_cast<std::int64_t>(raw.size()) == n * static_cast<std::int64_t>(sizeof(S)), ValueError,
                 what << ": raw_data holds " << raw.size() << " bytes, the dims need " << n * sizeof(S));
  out.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    S s;
    std::memcpy(&s, raw.data() + i * sizeof(S), sizeof(S));
    out[static_cast<std::size_t>(i)] = static_cast<double>(s);
  }
}

template <typename F>
void read_field(const F& field, std::vector<double>& out) {
  out.assign(field.begin(), field.end());
}

}  // namespace

Const to_const(const pb::TensorProto& t, const std::string& what) {
  Const c;
  c.type = t.data_type();
  for (std::int64_t d : t.dims()) {
    MAGMADNN_CHECK(d >= 0, ValueError, what << ": negative dimension " << d);
    c.dims.push_back(d);
  }
  const std::int64_t n = c.numel();
  // The values: raw_data as element type S, else the typed field F.
  const auto read = [&]<typename S>(const auto& field) {
    if (t.has_raw_data()) read_raw<S>(t.raw_data(), c.v, n, what); else read_field(field, c.v);
  };
  using P = pb::TensorProto;
  switch (t.data_type()) {
    case P::FLOAT: read.operator()<float>(t.float_data()); break;
    case P::DOUBLE: read.operator()<double>(t.double_data()); break;
    case P::INT64: read.operator()<std::int64_t>(t.int64_data()); break;
    case P::INT32: read.operator()<std::int32_t>(t.int32_data()); break;
    case P::INT16: read.operator()<std::int16_t>(t.int32_data()); break;
    case P::INT8: read.operator()<std::int8_t>(t.int32_data()); break;
    case P::BOOL: case P::UINT8: read.operator()<std::uint8_t>(t.int32_data()); break;
    case P::UINT16: read.operator()<std::uint16_t>(t.int32_data()); break;
    case P::UINT32: read.operator()<std::uint32_t>(t.uint64_data()); break;
    case P::UINT64: read.operator()<std::uint64_t>(t.uint64_data()); break;
    default:
      MAGMADNN_THROW(NotSupportedError, what << ": element type "
                                             << pb::TensorProto::DataType_Name(
                                                    static_cast<pb::TensorProto::DataType>(t.data_type()))
                                             << " (the importer reads float, double, bool and 8- to 64-bit integer tensors)");
  }
  MAGMADNN_CHECK(static_cast<std::int64_t>(c.v.size()) == n, ValueError,
                 what << ": " << c.v.size() << " values for dims of " << n << " elements");
  return c;
}

Tensor<float> to_tensor(const Const& c) {
  std::vector<float> v(c.v.begin(), c.v.end());
  std::vector<std::int64_t> dims = c.dims;
  if (dims.empty()) dims = {1};  // magmadnn has no rank-0 tensor: a scalar is {1}
  return Tensor<float>::from_vector(Shape(dims), v);
}

NodeCtx::NodeCtx(const pb::NodeProto& n, std::string w, std::int64_t o, std::vector<Value*> inputs,
                 std::vector<std::shared_ptr<layer::Layer<float>>>& ls, bool t)
    : node(n), where(std::move(w)), opset(o), in(std::move(inputs)), layers(ls), static_shapes(t) {}

namespace {

// Whether operator `op` carries or reads a free batch size held by its
// input i (Const::batch_at): the shape arithmetic of x.view(x.size(0), -1).
bool reads_batch_size(const std::string& op, std::size_t i) {
  if (op == "Concat" || (op == "Reshape" && i == 1)) return true;
  for (const char* o : {"Cast", "Gather", "Squeeze", "Unsqueeze"}) {
    if (op == o) return i == 0;
  }
  return false;
}

}  // namespace

void NodeCtx::refuse_batch_size(std::size_t i, bool as_value) const {
  if (!in[i]->k || in[i]->k->batch_at < 0 || (!as_value && reads_batch_size(node.op_type(), i))) return;
  unsupported("input " + std::to_string(i) + " '" + node.input(static_cast<int>(i)) +
              "' holds the batch size, which is free (only the data of Gather, Unsqueeze, Squeeze and Cast, "
              "Concat, Identity and Reshape's shape read it)");
}

op::Expr<float> NodeCtx::x(std::size_t i) {
  if (!has(i)) invalid("input " + std::to_string(i) + " is missing");
  Value& v = *in[i];
  if (!v.expr) {
    refuse_batch_size(i, true);
    const int t = v.k->type;
    if (integral(t) && !integers) {
      unsupported("input " + std::to_string(i) + " '" + node.input(static_cast<int>(i)) +
                  "' is not a float tensor (the importer computes in float)");
    }
    v.expr = op::constant<float>(node.input(static_cast<int>(i)), to_tensor(*v.k));
  }
  return v.expr;
}

const Const& NodeCtx::k(std::size_t i) const {
  if (!has(i)) invalid("input " + std::to_string(i) + " is missing");
  if (!in[i]->k) {
    unsupported("input " + std::to_string(i) + " '" + node.input(static_cast<int>(i)) +
                "' must be known at import time (an initializer or a constant)");
  }
  refuse_batch_size(i, false);
  return *in[i]->k;
}

Shape NodeCtx::shape(std::size_t i) {
  if (is_const(i)) return Shape(in[i]->k->dims.empty() ? std::vector<std::int64_t>{1} : in[i]->k->dims);
  return x(i)->get_output_shape();
}

const pb::AttributeProto* NodeCtx::attr(const std::string& name) const {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::int64_t NodeCtx::i(const std::string& name, std::int64_t def) const {
  const auto* a = attr(name);
  return a ? a->i() : def;
}
float NodeCtx::f(const std::string& name, float def) const {
  const auto* a = attr(name);
  return a ? a->f() : def;
}
std::string NodeCtx::s(const std::string& name, const std::string& def) const {
  const auto* a = attr(name);
  return a ? a->s() : def;
}
std::vector<std::int64_t> NodeCtx::ints(const std::string& name, std::vector<std::int64_t> def) const {
  const auto* a = attr(name);
  return a ? std::vector<std::int64_t>(a->ints().begin(), a->ints().end()) : def;
}

void NodeCtx::unsupported(const std::string& what) const { MAGMADNN_THROW(NotSupportedError, where << ": " << what); }
void NodeCtx::invalid(const std::string& what) const { MAGMADNN_THROW(ValueError, where << ": " << what); }

std::string NodeCtx::layer_name() const {
  std::string n = node.name().empty() ? node.op_type() + "_" + std::to_string(layers.size()) : node.name();
  for (char& ch : n) {
    if (ch == '/') ch = '_';  // '/' separates a layer's name from its weights' keys
  }
  return "onnx_" + std::to_string(layers.size()) + "_" + n;
}

namespace {

// A node computed by plain ops, held by the network as a layer.
class OpLayer : public layer::Layer<float> {
 public:
  OpLayer(std::string name, op::Expr<float> in, op::Expr<float> out, std::string type,
          const std::vector<std::pair<std::string, op::Var<float>>>& weights)
      : Layer<float>(std::move(name), std::move(in), "onnx"), type_(std::move(type)) {
    this->set_output(std::move(out));
    for (const auto& [key, v] : weights) this->add_weight(key, v);
  }
  std::string type_name() const override { return "ONNX " + type_; }

 private:
  std::string type_;
};

}  // namespace

Value NodeCtx::wrap(op::Expr<float> out, const op::Expr<float>& in0,
                    const std::vector<std::pair<std::string, op::Var<float>>>& weights) {
  return push(std::make_shared<OpLayer>(layer_name(), in0, std::move(out), node.op_type(), weights));
}

Value NodeCtx::push(std::shared_ptr<layer::Layer<float>> l) {
  layers.push_back(l);
  return Value{l->out(), std::nullopt};
}

}  // namespace magmadnn::onnx::detail
