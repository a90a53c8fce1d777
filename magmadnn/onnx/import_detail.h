/// @file import_detail.h
/// Internal to magmadnn_onnx: what an operator's builder sees while a model
/// is imported (import.cpp walks the nodes, import_ops.cpp holds the table).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "magmadnn/layer/layer.h"
#include "magmadnn/onnx/proto.h"

namespace magmadnn::onnx::detail {

/// A tensor known at import time (an initializer, a Constant, a shape):
/// values held as double, whatever the element type.
struct Const {
  std::vector<std::int64_t> dims;
  std::vector<double> v;
  int type = pb::TensorProto::FLOAT;
  /// The element (flat index) that stands for the free batch size, or -1:
  /// Shape of a tensor whose batch axis is free holds it (as 1, the
  /// placeholder's size), Gather, Unsqueeze, Squeeze, Concat, Cast and
  /// Identity carry it, and Reshape reads it as the batch axis; NodeCtx::k
  /// and x refuse it to every other operator.
  std::int64_t batch_at = -1;
  std::int64_t numel() const;
};

/// A value of the graph: a float expression, a constant, or both (a float
/// constant gets its expression on first use).
struct Value {
  op::Expr<float> expr;
  std::optional<Const> k;
  /// The ONNX element type of a computed value (expr without k): an integer
  /// type where the model computes integers, which magmadnn computes in
  /// float (import.cpp admits them only to operators whose float results
  /// are the integer ones while the values are exact).
  int type = pb::TensorProto::FLOAT;
};

/// Whether an ONNX element type is other than float and double.
inline bool integral(int type) { return type != pb::TensorProto::FLOAT && type != pb::TensorProto::DOUBLE; }

/// A builder's view of one node.
class NodeCtx {
 public:
  NodeCtx(const pb::NodeProto& n, std::string where, std::int64_t opset, std::vector<Value*> in,
          std::vector<std::shared_ptr<layer::Layer<float>>>& layers, bool static_shapes);

  const pb::NodeProto& node;
  const std::string where;  ///< "FILE: node 3 'conv1' (Conv, opset 17)"
  const std::int64_t opset;
  std::vector<Value*> in;   ///< null for an omitted optional input
  std::vector<std::shared_ptr<layer::Layer<float>>>& layers;
  bool static_shapes;       ///< every input shape is fixed (no free batch axis): Shape folds
  bool integers = false;    ///< the node computes on integers (x() then takes integer constants)

  std::size_t inputs() const { return in.size(); }
  bool has(std::size_t i) const { return i < in.size() && in[i] != nullptr; }
  /// Input i as a float expression (a float constant becomes op::constant).
  op::Expr<float> x(std::size_t i);
  /// Input i's value known now; ValueError naming the input otherwise.
  const Const& k(std::size_t i) const;
  bool is_const(std::size_t i) const { return has(i) && in[i]->k.has_value(); }
  /// Input i's element type (an ONNX TensorProto data type), known or computed.
  int type_of(std::size_t i) const { return is_const(i) ? k(i).type : in.at(i)->type; }
  /// NotSupportedError when input i holds the free batch size
  /// (Const::batch_at) and is read as a value (`as_value`, by x()) or by an
  /// operator that does not carry it.
  void refuse_batch_size(std::size_t i, bool as_value) const;
  /// The shape of input i as known now.
  Shape shape(std::size_t i);

  const pb::AttributeProto* attr(const std::string& name) const;
  std::int64_t i(const std::string& name, std::int64_t def) const;
  float f(const std::string& name, float def) const;
  std::string s(const std::string& name, const std::string& def) const;
  std::vector<std::int64_t> ints(const std::string& name, std::vector<std::int64_t> def = {}) const;
  /// A NotSupportedError "WHERE: what".
  [[noreturn]] void unsupported(const std::string& what) const;
  /// A ValueError "WHERE: what".
  [[noreturn]] void invalid(const std::string& what) const;
  /// A unique layer name for this node.
  std::string layer_name() const;
  /// Wraps `out` (computed by plain ops) in a layer so a network holds it;
  /// `weights` (key, variable) become the layer's trainable weights.
  Value wrap(op::Expr<float> out, const op::Expr<float>& in0,
             const std::vector<std::pair<std::string, op::Var<float>>>& weights = {});
  /// Whether axis 0 of the graph's inputs is free (reshapes then leave it -1).
  bool free_batch() const { return !static_shapes; }
  /// Appends a layer and returns its output.
  Value push(std::shared_ptr<layer::Layer<float>> l);
};

using Builder = std::vector<Value> (*)(NodeCtx& c);

struct OpEntry {
  const char* name;
  Builder build;
};

/// A builder's function type: the builders below are declared with it.
using BuildFn = std::vector<Value>(NodeCtx& c);

/// Builders defined in import_compose_ops.cpp (operators composed by
/// compose.h), for the table.
template <int Kind>  // a compose::Reduce
BuildFn reduce_op;
template <bool Cosh>
BuildFn sinh_cosh;
template <bool Softmax>
BuildFn class_loss;
template <bool Min>
BuildFn arg_extremum;
template <int Kind>
BuildFn compare;
template <int Kind>
BuildFn logical;
BuildFn thresholded_relu, shrink, sign, hardmax, gather_elements, gather_computed, where, cumsum,
    mod, gather_nd;
BuildFn layer_normalization, elu, celu, selu, hard_sigmoid, hard_swish, softsign, prelu, mean, clip_tensors, trilu;
/// Builders defined in import_layout_ops.cpp.
BuildFn slice_computed, split, depth_to_space, space_to_depth, instance_norm, mean_variance_norm, lrn, eye_like,
    conv_transpose;

/// The operator table (import_ops.cpp), sorted by name.
const std::vector<OpEntry>& op_table();
const OpEntry* find_op(const std::string& name);

/// A TensorProto as a Const (raw or typed fields); ValueError naming `what`
/// for a type or a size that does not fit. External data is resolved by the
/// caller first.
Const to_const(const pb::TensorProto& t, const std::string& what);
/// A float Const as a tensor.
Tensor<float> to_tensor(const Const& c);

}  // namespace magmadnn::onnx::detail
