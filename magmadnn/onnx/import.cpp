// Import: parse, check every node against the table, then build the nodes
// in order. Errors name the file, the node and the field; the result exists
// only when every node was built.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "magmadnn/core/errors.h"
#include "magmadnn/layer/input_layer.h"
#include "magmadnn/layer/output_layer.h"
#include "magmadnn/onnx/import_detail.h"
#include "magmadnn/onnx/onnx.h"

namespace magmadnn::onnx {
namespace {

using namespace detail;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  MAGMADNN_CHECK(in, IOError, path << ": cannot open the file");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  MAGMADNN_CHECK(!in.bad(), IOError, path << ": read error");
  return bytes.str();
}

std::string node_label(const pb::NodeProto& n, int i, std::int64_t opset) {
  std::ostringstream os;
  os << "node " << i << " '" << n.name() << "' (" << n.op_type();
  if (!n.domain().empty()) os << ", domain '" << n.domain() << "'";
  os << ", opset " << opset << ")";
  return os.str();
}

bool default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// The default domain's opset; refuses other domains' nodes, and opsets
// outside what the importer knows.
std::int64_t check_opsets(const pb::ModelProto& m, const std::string& src) {
  std::int64_t opset = -1;
  for (const auto& o : m.opset_import()) {
    if (default_domain(o.domain())) opset = o.version();
  }
  MAGMADNN_CHECK(opset >= 1, ValueError,
                 src << ": opset_import names no version of the default domain (ai.onnx)");
  MAGMADNN_CHECK(opset <= kMaxImportOpset, NotSupportedError,
                 src << ": opset_import: ai.onnx opset " << opset << " is newer than the importer knows (up to "
                     << kMaxImportOpset << ")");
  const auto& nodes = m.graph().node();
  for (int i = 0; i < nodes.size(); ++i) {
    const pb::NodeProto& n = nodes[i];
    if (!default_domain(n.domain())) {
      MAGMADNN_THROW(NotSupportedError, src << ": " << node_label(n, i, opset) << ": domain '" << n.domain()
                                            << "' is unknown to the importer (only ai.onnx)");
    }
    if (!find_op(n.op_type())) {
      MAGMADNN_THROW(NotSupportedError, src << ": " << node_label(n, i, opset) << ": operator " << n.op_type()
                                            << " is not supported by the importer");
    }
  }
  return opset;
}

// The exact GELU as opsets before 20 spell it (torch.onnx.export's and our
// export's form): y = x * (1 + Erf(x / sqrt 2)) * 0.5, five nodes whose
// intermediates nothing else reads. Each such chain becomes one Gelu node
// (opset 20's operator; the importer has no Erf).
class GeluFusion {
 public:
  explicit GeluFusion(pb::GraphProto& g) : g_(g) {
    for (const auto& t : g.initializer()) {
      if (t.dims_size() == 0 || (t.dims_size() == 1 && t.dims(0) == 1)) scalars_[t.name()] = &t;
    }
    for (int i = 0; i < g.node_size(); ++i) {
      for (const auto& in : g.node(i).input()) ++readers_[in];
      if (g.node(i).op_type() == "Constant") {
        for (const auto& a : g.node(i).attribute()) {
          if (a.name() == "value" && a.t().dims_size() <= 1) scalars_[g.node(i).output(0)] = &a.t();
        }
      }
      for (const auto& o : g.node(i).output()) producer_[o] = i;
    }
    for (const auto& o : g.output()) ++readers_[o.name()];
  }

  void run() {
    std::vector<bool> drop(static_cast<std::size_t>(g_.node_size()), false);
    for (int i = 0; i < g_.node_size(); ++i) {
      if (g_.node(i).op_type() == "Erf") match(i, drop);
    }
    pb::GraphProto kept;
    for (int i = 0; i < g_.node_size(); ++i) {
      if (!drop[static_cast<std::size_t>(i)]) *kept.add_node() = g_.node(i);
    }
    g_.mutable_node()->Swap(kept.mutable_node());
  }

 private:
  bool is(const std::string& name, double v) const {
    const auto it = scalars_.find(name);
    if (it == scalars_.end()) return false;
    try {
      const Const c = to_const(*it->second, name);
      return c.v.size() == 1 && std::abs(c.v[0] - v) < 1e-4;
    } catch (const Error&) {
      return false;
    }
  }
  // The one node reading `value` (-1 when none or several, or a graph output).
  int reader(const std::string& value) const {
    if (readers_.count(value) == 0 || readers_.at(value) != 1) return -1;
    for (int i = 0; i < g_.node_size(); ++i) {
      for (const auto& in : g_.node(i).input()) {
        if (in == value) return i;
      }
    }
    return -1;
  }
  // The input of binary node n that is not `known` (empty when neither is).
  static std::string other(const pb::NodeProto& n, const std::string& known) {
    if (n.input_size() != 2) return "";
    return n.input(0) == known ? n.input(1) : n.input(1) == known ? n.input(0) : "";
  }

  void match(int e, std::vector<bool>& drop) {
    const pb::NodeProto& erf = g_.node(e);
    const auto p = producer_.find(erf.input(0));
    if (p == producer_.end() || readers_[erf.input(0)] != 1) return;
    const pb::NodeProto& div = g_.node(p->second);
    if (div.op_type() != "Div" || div.input_size() != 2 || !is(div.input(1), std::sqrt(2.0))) return;
    const std::string x = div.input(0);
    const int a = reader(erf.output(0));
    if (a < 0 || g_.node(a).op_type() != "Add" || !is(other(g_.node(a), erf.output(0)), 1.0)) return;
    const int m1 = reader(g_.node(a).output(0));
    if (m1 < 0 || g_.node(m1).op_type() != "Mul" || other(g_.node(m1), g_.node(a).output(0)) != x) return;
    const int m2 = reader(g_.node(m1).output(0));
    if (m2 < 0 || g_.node(m2).op_type() != "Mul" || !is(other(g_.node(m2), g_.node(m1).output(0)), 0.5)) return;
    pb::NodeProto* gelu = g_.mutable_node(m2);
    const std::string y = gelu->output(0), name = gelu->name();
    gelu->Clear();
    gelu->set_op_type("Gelu");
    gelu->set_name(name.empty() ? div.name() : name);
    gelu->add_input(x);
    gelu->add_output(y);
    for (int k : {p->second, e, a, m1}) drop[static_cast<std::size_t>(k)] = true;
  }

  pb::GraphProto& g_;
  std::map<std::string, const pb::TensorProto*> scalars_;
  std::map<std::string, int> readers_, producer_;
};

// Reads an initializer's external data (location relative to the model).
void load_external(pb::TensorProto& t, const std::string& base, const std::string& what) {
  std::string location;
  std::int64_t offset = 0, length = -1;
  for (const auto& e : t.external_data()) {
    if (e.key() == "location") location = e.value();
    else if (e.key() == "offset") offset = std::stoll(e.value());
    else if (e.key() == "length") length = std::stoll(e.value());
  }
  MAGMADNN_CHECK(!location.empty(), ValueError, what << ": external data without a location");
  const std::string path = (std::filesystem::path(base) / location).string();
  std::ifstream in(path, std::ios::binary);
  MAGMADNN_CHECK(in, IOError, what << ": external data file " << path << " cannot be opened");
  in.seekg(offset);
  std::string bytes;
  if (length < 0) {
    std::ostringstream os;
    os << in.rdbuf();
    bytes = os.str();
  } else {
    bytes.resize(static_cast<std::size_t>(length));
    in.read(bytes.data(), length);
    MAGMADNN_CHECK(in.gcount() == length, IOError, what << ": external data file " << path << " holds fewer than "
                                                        << offset + length << " bytes");
  }
  t.set_raw_data(bytes);
  t.clear_external_data();
  t.set_data_location(pb::TensorProto::DEFAULT);
}

std::string type_name(int t) {
  return pb::TensorProto::DataType_Name(static_cast<pb::TensorProto::DataType>(t));
}

// The element types a graph input may have: magmadnn computes them in float
// (double rounded; integers exact below 2^24; bool as 0 and 1).
bool computable(int t) {
  using P = pb::TensorProto;
  for (int ok : {P::FLOAT, P::DOUBLE, P::BOOL, P::INT8, P::INT16, P::INT32, P::INT64, P::UINT8, P::UINT16, P::UINT32,
                 P::UINT64}) {
    if (t == ok) return true;
  }
  return false;
}

// How an operator takes integer tensors computed at run time: Keeps, for
// those whose float result is the integer one while every value is an
// exact integer in float and within the type's range (no rounding
// division, no wrap-around); Reads, for those that read them as class
// indices (the losses) or read only their shape (a float or constant
// result); No for the others.
enum class IntegerUse { No, Keeps, Reads };
IntegerUse integer_use(const std::string& op) {
  static const std::set<std::string> keeps = {"Abs", "Add", "Cast", "Clip", "Concat", "Flatten", "Identity",
                                              "Max", "MaxPool", "Min", "Mod", "Mul", "Neg", "Reshape", "Squeeze",
                                              "Sub", "Sum", "Transpose", "Trilu", "Unsqueeze",
                                              "And", "Or", "Xor", "Not", "Where", "CumSum"};
  static const std::set<std::string> reads = {"ArgMax", "ArgMin", "Equal", "EyeLike", "Gather", "GatherElements", "GatherND", "Greater",
                                              "GreaterOrEqual", "Less", "LessOrEqual", "NegativeLogLikelihoodLoss", "Shape", "Size",
                                              "SoftmaxCrossEntropyLoss"};
  if (reads.count(op)) return IntegerUse::Reads;
  return keeps.count(op) ? IntegerUse::Keeps : IntegerUse::No;
}

// The placeholder of graph input `v`: symbolic or unknown axes are -1.
std::shared_ptr<layer::Layer<float>> make_input(const pb::ValueInfoProto& v, const std::string& src,
                                                bool free_batch) {
  const std::string what = src + ": graph input '" + v.name() + "'";
  MAGMADNN_CHECK(v.type().has_tensor_type(), NotSupportedError, what << " is not a tensor");
  const auto& t = v.type().tensor_type();
  MAGMADNN_CHECK(computable(t.elem_type()), NotSupportedError,
                 what << " has element type " << type_name(t.elem_type())
                      << " (the importer computes float, double and integer tensors, in float)");
  MAGMADNN_CHECK(t.has_shape(), NotSupportedError, what << " has no shape (its rank must be known)");
  std::vector<std::int64_t> pattern;
  for (const auto& d : t.shape().dim()) pattern.push_back(d.has_dim_value() ? d.dim_value() : -1);
  if (free_batch && !pattern.empty()) pattern[0] = -1;
  if (pattern.empty()) pattern = {1};
  return layer::input<float>(pattern).ptr();
}

// Whether node `from` (the later producer of an input of node `to`) reads
// `to`'s output, directly or through other nodes: then the graph has a cycle.
bool reaches(const pb::GraphProto& g, int from, int to) {
  std::map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i) {
    for (const auto& o : g.node(i).output()) producer[o] = i;
  }
  std::vector<int> stack{from};
  std::set<int> seen;
  while (!stack.empty()) {  // walk upstream from `from`, looking for `to`
    const int n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    for (const auto& in : g.node(n).input()) {
      const auto it = producer.find(in);
      if (it == producer.end()) continue;
      if (it->second == to) return true;
      stack.push_back(it->second);
    }
  }
  return false;
}

struct Walk {
  const pb::GraphProto& g;
  const std::string& src;
  std::int64_t opset;
  bool static_shapes;
  std::map<std::string, Value> values;
  std::map<std::string, int> later;  // output name -> producing node, for messages
  std::vector<std::shared_ptr<layer::Layer<float>>> layers;

  std::vector<Value*> inputs_of(const pb::NodeProto& n, int idx, const std::string& where) {
    std::vector<Value*> in;
    for (const auto& name : n.input()) {
      if (name.empty()) {
        in.push_back(nullptr);
        continue;
      }
      const auto it = values.find(name);
      if (it != values.end()) {
        in.push_back(&it->second);
        continue;
      }
      const auto p = later.find(name);
      if (p == later.end()) {
        MAGMADNN_THROW(ValueError, where << ": input '" << name
                                         << "' is no graph input, initializer or node output");
      }
      const bool cycle = p->second == idx || reaches(g, p->second, idx);
      MAGMADNN_THROW(ValueError, where << ": input '" << name << "' comes from node " << p->second << " '"
                                       << g.node(p->second).name() << "'"
                                       << (cycle ? ", which reads this node's output: the graph has a cycle"
                                                 : ", which comes later: the nodes are not in topological order"));
    }
    return in;
  }

  void node(int i) {
    const pb::NodeProto& n = g.node(i);
    const std::string where = src + ": " + node_label(n, i, opset);
    NodeCtx c(n, where, opset, inputs_of(n, i, where), layers, static_shapes);
    const int int_type = integer_input(c);
    std::vector<Value> out;
    try {
      out = find_op(n.op_type())->build(c);
    } catch (const Error& e) {
      const std::string msg = e.what();
      if (msg.rfind(src, 0) == 0) throw;  // already names the file and node
      MAGMADNN_THROW(ShapeError, where << ": " << msg);
    }
    for (int k = 0; k < n.output_size(); ++k) {
      if (n.output(k).empty()) continue;
      if (static_cast<std::size_t>(k) >= out.size()) {
        c.unsupported("output " + std::to_string(k) + " '" + n.output(k) + "' is not computed by the importer");
      }
      Value& v = values[n.output(k)] = out[static_cast<std::size_t>(k)];
      if (!v.k && integral(int_type) && n.op_type() != "Cast") v.type = int_type;
    }
  }

  // The integer type of the node's computed integer inputs (FLOAT when it
  // has none); refuses an operator that would not give the integer result.
  static int integer_input(NodeCtx& c) {
    for (std::size_t i = 0; i < c.inputs(); ++i) {
      if (!c.has(i) || c.in[i]->k || !integral(c.in[i]->type)) continue;
      // Where's condition selects and CumSum's axis names an axis: the other inputs' type is the result's.
      if ((c.node.op_type() == "Where" && i == 0) || (c.node.op_type() == "CumSum" && i == 1)) continue;
      const IntegerUse use = integer_use(c.node.op_type());
      if (use == IntegerUse::No) {
        c.unsupported("input " + std::to_string(i) + " '" + c.node.input(static_cast<int>(i)) + "' holds " +
                      type_name(c.in[i]->type) + " values computed at run time, which " + c.node.op_type() +
                      " does not take (integers are computed, in float, only by the operators docs/onnx.md "
                      "lists; a shape, axes or indices must be known at import time)");
      }
      c.integers = true;
      return use == IntegerUse::Keeps ? c.in[i]->type : pb::TensorProto::FLOAT;
    }
    return pb::TensorProto::FLOAT;
  }
};

Imported build(pb::ModelProto& m, const std::string& src, const std::string& base, bool free_batch) {
  GeluFusion(*m.mutable_graph()).run();
  const std::int64_t opset = check_opsets(m, src);
  const pb::GraphProto& g = m.graph();
  Walk w{g, src, opset, true, {}, {}, {}};
  for (int i = 0; i < g.node_size(); ++i) {
    for (const auto& o : g.node(i).output()) w.later.emplace(o, i);
  }
  for (const auto& init : g.initializer()) {
    pb::TensorProto t = init;
    const std::string what = src + ": initializer '" + t.name() + "'";
    if (t.data_location() == pb::TensorProto::EXTERNAL) load_external(t, base, what);
    w.values[t.name()] = Value{{}, to_const(t, what)};
  }
  Imported r;
  r.opset = opset;
  for (const auto& v : g.input()) {
    if (w.values.count(v.name())) continue;  // an initializer listed as an input (IR < 4)
    auto in = make_input(v, src, free_batch);
    w.layers.push_back(in);
    const int type = v.type().tensor_type().elem_type();
    w.values[v.name()] = Value{in->out(), std::nullopt, type == pb::TensorProto::DOUBLE ? pb::TensorProto::FLOAT : type};
    const op::Var<float> ph = std::static_pointer_cast<layer::InputLayer<float>>(in)->placeholder();
    for (std::int64_t d : ph->pattern()) w.static_shapes = w.static_shapes && d >= 0;
    r.inputs.emplace_back(v.name(), ph);
  }
  for (int i = 0; i < g.node_size(); ++i) w.node(i);
  MAGMADNN_CHECK(g.output_size() > 0, ValueError, src << ": the graph has no output");
  for (const auto& o : g.output()) {
    const auto it = w.values.find(o.name());
    MAGMADNN_CHECK(it != w.values.end(), ValueError,
                   src << ": graph output '" << o.name() << "' is computed by no node");
    Value& v = it->second;
    MAGMADNN_CHECK(v.expr || v.k->batch_at < 0, NotSupportedError,
                   src << ": graph output '" << o.name() << "' holds the batch size, which is free");
    if (!v.expr) v.expr = op::constant<float>(o.name(), to_tensor(*v.k));
    r.outputs.emplace_back(o.name(), v.expr);
  }
  w.layers.push_back(layer::output<float>(r.outputs.front().second).ptr());
  for (auto& l : w.layers) l->set_training(false);
  r.layers = std::move(w.layers);
  return r;
}

pb::ModelProto parse(const std::string& bytes, const std::string& src) {
  pb::ModelProto m;
  MAGMADNN_CHECK(!bytes.empty(), IOError, src << ": the file is empty, not an ONNX model");
  MAGMADNN_CHECK(m.ParseFromString(bytes), IOError,
                 src << ": not an ONNX model (protobuf cannot parse it: truncated or corrupt)");
  MAGMADNN_CHECK(m.has_graph() && m.ir_version() > 0, IOError,
                 src << ": not an ONNX model (no ir_version or no graph: truncated or another kind of file)");
  return m;
}

}  // namespace

Imported import_model_bytes(const std::string& bytes, const std::string& source, const std::string& base_dir) {
  pb::ModelProto m = parse(bytes, source);
  return build(m, source, base_dir, false);
}

Imported import_model(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return import_model_bytes(read_file(path), path, dir.empty() ? "." : dir);
}

std::unique_ptr<model::NeuralNetwork<float>> import_network(const std::string& path, optimizer::loss_t loss,
                                                            optimizer::optimizer_t opt, model::nn_params_t params) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  pb::ModelProto m = parse(read_file(path), path);
  Imported g = build(m, path, dir.empty() ? "." : dir, true);
  MAGMADNN_CHECK(g.inputs.size() == 1 && g.outputs.size() == 1, NotSupportedError,
                 path << ": a network needs one input and one output; the model has " << g.inputs.size()
                      << " inputs and " << g.outputs.size() << " outputs");
  return std::make_unique<model::NeuralNetwork<float>>(g.layers, loss, opt, params);
}

Tensor<float> read_tensor_file(const std::string& path) {
  pb::TensorProto t;
  MAGMADNN_CHECK(t.ParseFromString(read_file(path)), IOError, path << ": not an ONNX TensorProto");
  return to_tensor(to_const(t, path));
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> names;
  for (const OpEntry& e : op_table()) names.emplace_back(e.name);
  return names;
}

}  // namespace magmadnn::onnx
