// The importer's builders for operators composed from magmadnn's ops
// (compose.h): the Reduce* family and LayerNormalization.
#include <algorithm>
#include <cmath>

#include "magmadnn/compute/variable.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/onnx/compose.h"
#include "magmadnn/onnx/import_detail.h"

namespace magmadnn::onnx::detail {
namespace {

using Dims = std::vector<std::int64_t>;

// The axes of a Reduce* node: the attribute up to the opset that moved them
// into input 1 (13 for ReduceSum, 18 for the others).
Dims reduce_axes(NodeCtx& c, bool sum) {
  if (c.opset >= (sum ? 13 : 18)) {
    if (!c.has(1)) return {};
    const Const& k = c.k(1);
    return {k.v.begin(), k.v.end()};
  }
  return c.ints("axes");
}

std::int64_t normalized(const NodeCtx& c, std::int64_t a, std::int64_t rank) {
  if (a < 0) a += rank;
  if (a < 0 || a >= rank) c.invalid("axis out of range for rank " + std::to_string(rank));
  return a;
}

}  // namespace

template <int Kind>
std::vector<Value> reduce_op(NodeCtx& c) {
  const auto kind = static_cast<compose::Reduce>(Kind);
  const std::int64_t rank = c.shape(0).ndim();
  Dims axes = reduce_axes(c, kind == compose::Reduce::Sum);
  if (axes.empty() && c.i("noop_with_empty_axes", 0) != 0) return {*c.in.at(0)};
  for (auto& a : axes) a = normalized(c, a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) c.invalid("an axis is named twice");
  const op::Expr<float> x = c.x(0);
  return {c.wrap(compose::reduce(kind, x, axes, c.i("keepdims", 1) != 0, c.free_batch()), x)};
}

template std::vector<Value> reduce_op<static_cast<int>(compose::Reduce::Sum)>(NodeCtx&);
template std::vector<Value> reduce_op<static_cast<int>(compose::Reduce::Mean)>(NodeCtx&);
template std::vector<Value> reduce_op<static_cast<int>(compose::Reduce::Max)>(NodeCtx&);
template std::vector<Value> reduce_op<static_cast<int>(compose::Reduce::Min)>(NodeCtx&);
template std::vector<Value> reduce_op<static_cast<int>(compose::Reduce::L1)>(NodeCtx&);
template std::vector<Value> reduce_op<static_cast<int>(compose::Reduce::L2)>(NodeCtx&);
template std::vector<Value> reduce_op<static_cast<int>(compose::Reduce::SumSquare)>(NodeCtx&);
template std::vector<Value> reduce_op<static_cast<int>(compose::Reduce::LogSum)>(NodeCtx&);
template std::vector<Value> reduce_op<static_cast<int>(compose::Reduce::LogSumExp)>(NodeCtx&);
template std::vector<Value> reduce_op<static_cast<int>(compose::Reduce::Prod)>(NodeCtx&);

// LayerNormalization: scale and bias known at import time become the
// layer's trainable weights (like Gemm's), else they are computed inputs.
std::vector<Value> layer_normalization(NodeCtx& c) {
  if (c.i("stash_type", 1) != 1) c.unsupported("stash_type other than 1 (float)");
  const op::Expr<float> x = c.x(0);
  const std::int64_t axis = normalized(c, c.i("axis", -1), c.shape(0).ndim());
  std::vector<std::pair<std::string, op::Var<float>>> weights;
  const auto param = [&](std::size_t i, const std::string& key) -> op::Expr<float> {
    if (!c.has(i)) return {};
    if (!c.is_const(i)) return c.x(i);
    auto v = op::Var<float>(std::make_shared<op::Variable<float>>(c.layer_name() + "/" + key, to_tensor(c.k(i))));
    weights.emplace_back(key, v);
    return v;
  };
  const op::Expr<float> scale = param(1, "scale"), bias = param(2, "bias");
  if (!scale) c.invalid("input 1 (Scale) is missing");
  const auto ys = compose::layer_norm(x, scale, bias, axis, c.f("epsilon", 1e-5f), c.free_batch());
  return {c.wrap(ys[0], x, weights), Value{ys[1], std::nullopt}, Value{ys[2], std::nullopt}};
}

std::vector<Value> elu(NodeCtx& c) { return {c.wrap(compose::elu(c.x(0), c.f("alpha", 1.0f)), c.x(0))}; }

std::vector<Value> celu(NodeCtx& c) { return {c.wrap(compose::celu(c.x(0), c.f("alpha", 1.0f)), c.x(0))}; }

std::vector<Value> selu(NodeCtx& c) {
  const double alpha = c.f("alpha", 1.67326319217681884765625f), gamma = c.f("gamma", 1.05070102214813232421875f);
  return {c.wrap(op::scalarproduct(gamma, compose::elu(c.x(0), alpha)), c.x(0))};
}

std::vector<Value> hard_sigmoid(NodeCtx& c) {
  return {c.wrap(compose::hard_sigmoid(c.x(0), c.f("alpha", 0.2f), c.f("beta", 0.5f)), c.x(0))};
}

std::vector<Value> hard_swish(NodeCtx& c) {
  return {c.wrap(op::product(c.x(0), compose::hard_sigmoid(c.x(0), 1.0 / 6.0, 0.5)), c.x(0))};
}

std::vector<Value> softsign(NodeCtx& c) { return {c.wrap(compose::softsign(c.x(0)), c.x(0))}; }

// PRelu: a slope known at import time becomes the node's trainable weight.
std::vector<Value> prelu(NodeCtx& c) {
  std::vector<std::pair<std::string, op::Var<float>>> weights;
  op::Expr<float> slope;
  if (c.is_const(1)) {
    auto v = op::Var<float>(std::make_shared<op::Variable<float>>(c.layer_name() + "/slope", to_tensor(c.k(1))));
    weights.emplace_back("slope", v);
    slope = v;
  } else {
    slope = c.x(1);
  }
  return {c.wrap(compose::prelu(c.x(0), slope), c.x(0), weights)};
}

template <bool Cosh>
std::vector<Value> sinh_cosh(NodeCtx& c) { return {c.wrap(compose::sinh_cosh(c.x(0), Cosh), c.x(0))}; }
template std::vector<Value> sinh_cosh<true>(NodeCtx&);
template std::vector<Value> sinh_cosh<false>(NodeCtx&);

std::vector<Value> mean(NodeCtx& c) {
  op::Expr<float> y = c.x(0);
  for (std::size_t i = 1; i < c.inputs(); ++i) y = op::add(y, c.x(i));
  return {c.wrap(c.inputs() == 1 ? y : op::scalarproduct(1.0 / static_cast<double>(c.inputs()), y), c.x(0))};
}

// Clip with bounds computed at run time (opset 11 on): the bounds are tensors.
std::vector<Value> clip_tensors(NodeCtx& c) {
  const op::Expr<float> lo = c.has(1) ? c.x(1) : op::Expr<float>(), hi = c.has(2) ? c.x(2) : op::Expr<float>();
  return {c.wrap(compose::clip(c.x(0), lo, hi), c.x(0))};
}

std::vector<Value> trilu(NodeCtx& c) {
  const std::int64_t k = c.has(1) ? static_cast<std::int64_t>(c.k(1).v.at(0)) : 0;
  return {c.wrap(compose::trilu(c.x(0), k, c.i("upper", 1) != 0), c.x(0))};
}

// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (log_softmax over
// axis 1 first; output 1 its result): the targets are class indices,
// integers computed at run time or known.
template <bool Softmax>
std::vector<Value> class_loss(NodeCtx& c) {
  const op::Expr<float> x = c.x(0);
  const op::Expr<float> logp = Softmax ? compose::log_softmax_axis(x, 1) : x;
  std::optional<std::int64_t> ignore;
  if (c.attr("ignore_index")) ignore = c.i("ignore_index", 0);
  const op::Expr<float> w = c.has(2) ? c.x(2) : op::Expr<float>();
  const std::string reduction = c.s("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") c.invalid("reduction '" + reduction + "'");
  std::vector<Value> out{c.wrap(compose::nll_loss(logp, c.x(1), w, ignore, reduction, c.free_batch()), x)};
  if (Softmax) out.push_back(Value{logp, std::nullopt});
  return out;
}
template std::vector<Value> class_loss<true>(NodeCtx&);
template std::vector<Value> class_loss<false>(NodeCtx&);

// ArgMax and ArgMin (op::argmax, of -x for the minimum; an INT64 result):
// select_last_index reverses the axis first (its slices joined in reverse
// order) and maps the index back.
template <bool Min>
std::vector<Value> arg_extremum(NodeCtx& c) {
  const op::Expr<float> x = c.x(0);
  const Shape s = c.shape(0);
  const std::int64_t axis = normalized(c, c.i("axis", 0), s.ndim()), n = s[axis];
  const bool last = c.i("select_last_index", 0) != 0;
  if (axis == 0 && c.free_batch()) c.unsupported("an arg max or min over the free batch axis");
  op::Expr<float> v = Min ? op::negative(x) : x;
  if (last) {
    std::vector<op::Expr<float>> parts;
    for (std::int64_t k = n - 1; k >= 0; --k) parts.push_back(op::slice(v, axis, k, k + 1));
    v = op::concat(parts, axis);
  }
  op::Expr<float> y = op::argmax(v, axis, c.i("keepdims", 1) != 0);
  if (last) y = op::add_scalar(op::negative(y), static_cast<double>(n - 1));
  Value out = c.wrap(y, x);
  out.type = pb::TensorProto::INT64;
  return {out};
}
template std::vector<Value> arg_extremum<true>(NodeCtx&);
template std::vector<Value> arg_extremum<false>(NodeCtx&);

namespace {
Value typed(Value v, int type) {
  v.type = type;
  return v;
}
op::Expr<float> step(NodeCtx& c, const op::Expr<float>& z) { return compose::step(z, c.free_batch()); }
op::Expr<float> one_minus(const op::Expr<float>& v) { return op::add_scalar(op::negative(v), 1.0); }
}  // namespace

// Comparisons, [a > b] as step(a - b): a BOOL result of 1 and 0.
template <int Kind>  // 0 Greater, 1 Less, 2 GreaterOrEqual, 3 LessOrEqual, 4 Equal
std::vector<Value> compare(NodeCtx& c) {
  const op::Expr<float> a = c.x(0), b = c.x(1);
  op::Expr<float> y;
  switch (Kind) {
    case 0: y = step(c, op::sub(a, b)); break;
    case 1: y = step(c, op::sub(b, a)); break;
    case 2: y = one_minus(step(c, op::sub(b, a))); break;
    case 3: y = one_minus(step(c, op::sub(a, b))); break;
    default: y = op::sub(one_minus(step(c, op::sub(a, b))), step(c, op::sub(b, a))); break;
  }
  return {typed(c.wrap(y, a), pb::TensorProto::BOOL)};
}
template std::vector<Value> compare<0>(NodeCtx&);
template std::vector<Value> compare<1>(NodeCtx&);
template std::vector<Value> compare<2>(NodeCtx&);
template std::vector<Value> compare<3>(NodeCtx&);
template std::vector<Value> compare<4>(NodeCtx&);

// And, Or, Xor of 0/1 values: ab, a + b - ab, (a - b)^2; Not: 1 - a.
template <int Kind>  // 0 And, 1 Or, 2 Xor, 3 Not
std::vector<Value> logical(NodeCtx& c) {
  const op::Expr<float> a = c.x(0);
  if (Kind == 3) return {c.wrap(one_minus(a), a)};
  const op::Expr<float> b = c.x(1), ab = op::product(a, b);
  const op::Expr<float> y = Kind == 0   ? ab
                            : Kind == 1 ? op::sub(op::add(a, b), ab)
                                        : op::unary(UnaryOp::Square, op::sub(a, b));
  return {c.wrap(y, a)};
}
template std::vector<Value> logical<0>(NodeCtx&);
template std::vector<Value> logical<1>(NodeCtx&);
template std::vector<Value> logical<2>(NodeCtx&);
template std::vector<Value> logical<3>(NodeCtx&);

// ThresholdedRelu x [x > alpha]; Shrink (x - bias)[x > lambd] + (x + bias)[-x > lambd];
// Sign [x > 0] - [x < 0].
std::vector<Value> thresholded_relu(NodeCtx& c) {
  const op::Expr<float> x = c.x(0);
  return {c.wrap(op::product(x, step(c, op::add_scalar(x, -c.f("alpha", 1.0f)))), x)};
}
std::vector<Value> shrink(NodeCtx& c) {
  const op::Expr<float> x = c.x(0);
  const double bias = c.f("bias", 0.0f), lambd = c.f("lambd", 0.5f);
  const op::Expr<float> up = op::product(op::add_scalar(x, -bias), step(c, op::add_scalar(x, -lambd)));
  const op::Expr<float> down = op::product(op::add_scalar(x, bias), step(c, op::add_scalar(op::negative(x), -lambd)));
  return {c.wrap(op::add(up, down), x)};
}
std::vector<Value> sign(NodeCtx& c) {
  const op::Expr<float> x = c.x(0);
  return {c.wrap(op::sub(step(c, x), step(c, op::negative(x))), x)};
}

// Hardmax: along `axis` (opset 13 on), else along the columns of the 2-D
// coercion at `axis` (as Softmax before opset 13).
std::vector<Value> hardmax(NodeCtx& c) {
  const op::Expr<float> x = c.x(0);
  const Shape s = c.shape(0);
  if (c.opset >= 13) return {c.wrap(compose::hardmax(x, normalized(c, c.i("axis", -1), s.ndim())), x)};
  const std::int64_t axis = normalized(c, c.i("axis", 1), s.ndim());
  std::int64_t rows = 1, cols = 1;
  for (std::int64_t k = 0; k < s.ndim(); ++k) (k < axis ? rows : cols) *= s[k];
  if (c.free_batch() && axis == 0) c.unsupported("a Hardmax over the free batch axis");
  const op::Expr<float> y = compose::hardmax(op::reshape(x, Dims{c.free_batch() ? -1 : rows, cols}), 1);
  Dims back = s.dims();
  if (c.free_batch()) back[0] = -1;
  return {c.wrap(op::reshape(y, back), x)};
}

// GatherElements with indices computed at run time or known.
std::vector<Value> gather_elements(NodeCtx& c) {
  const op::Expr<float> x = c.x(0);
  const std::int64_t axis = normalized(c, c.i("axis", 0), c.shape(0).ndim());
  if (axis == 0 && c.free_batch()) c.unsupported("a GatherElements along the free batch axis");
  return {c.wrap(compose::gather_elements(x, c.x(1), axis, c.free_batch()), x)};
}

// Gather where the table or the indices are computed at run time (compose::
// gather_rows). A float table known at import time (an embedding) becomes
// the node's trainable weight; a computed table needs fixed shapes.
std::vector<Value> gather_computed(NodeCtx& c) {
  const std::int64_t axis = normalized(c, c.i("axis", 0), c.shape(0).ndim());
  std::vector<std::pair<std::string, op::Var<float>>> weights;
  op::Expr<float> table;
  const int type = c.type_of(0);
  c.integers = true;  // integer indices (and an integer table) are read exactly
  if (!c.is_const(0)) {
    if (c.free_batch()) c.unsupported("a Gather from a computed table when the batch axis is free");
    table = c.x(0);
  } else if (!integral(type)) {
    auto v = op::Var<float>(std::make_shared<op::Variable<float>>(c.layer_name() + "/table", to_tensor(c.k(0))));
    weights.emplace_back("table", v);
    table = v;
  } else {
    table = c.x(0);
  }
  Value out = c.wrap(compose::gather_rows(table, c.x(1), axis, c.free_batch()), c.x(1), weights);
  out.type = type == pb::TensorProto::DOUBLE ? pb::TensorProto::FLOAT : type;
  return {out};
}

// Where: the condition (BOOL, computed as 0/1) selects X or Y; the result
// has X's element type (import.cpp reads the condition, keeps X and Y).
std::vector<Value> where(NodeCtx& c) {
  c.integers = true;  // a known BOOL condition, integer X and Y are exact in float
  const op::Expr<float> x = c.x(1);
  Value out = c.wrap(compose::where(c.x(0), x, c.x(2)), x);
  const int type = c.type_of(1);
  out.type = type == pb::TensorProto::DOUBLE ? pb::TensorProto::FLOAT : type;
  return {out};
}

// CumSum along the axis input 1 holds: known at import time, or read at
// run time (compose::cumsum_any_axis, fixed shapes only).
std::vector<Value> cumsum(NodeCtx& c) {
  const op::Expr<float> x = c.x(0);
  const bool exclusive = c.i("exclusive", 0) != 0, reverse = c.i("reverse", 0) != 0;
  if (!c.is_const(1)) {
    if (c.free_batch()) c.unsupported("a CumSum along an axis computed at run time when the batch axis is free");
    if (c.shape(1).numel() != 1) c.invalid("axis holds " + std::to_string(c.shape(1).numel()) + " values, not one");
    c.integers = true;
    return {c.wrap(compose::cumsum_any_axis(x, c.x(1), exclusive, reverse), x)};
  }
  const Const& ax = c.k(1);
  if (ax.numel() != 1) c.invalid("axis holds " + std::to_string(ax.numel()) + " values, not one");
  const std::int64_t axis = normalized(c, static_cast<std::int64_t>(ax.v[0]), c.shape(0).ndim());
  if (axis == 0 && c.free_batch()) c.unsupported("a CumSum along the free batch axis");
  return {c.wrap(compose::cumsum(x, axis, exclusive, reverse, c.free_batch()), x)};
}

// Mod (compose::mod; two known inputs of one size are folded). Integers
// are computed, in float, exactly.
std::vector<Value> mod(NodeCtx& c) {
  const bool fmod = c.i("fmod", 0) != 0;
  int types[2];
  for (std::size_t i = 0; i < 2; ++i) {
    types[i] = c.type_of(i);
    if (types[i] == pb::TensorProto::BOOL) c.unsupported("input " + std::to_string(i) + " holds BOOL values");
  }
  if (c.is_const(0) && c.is_const(1) && c.k(0).numel() == c.k(1).numel()) {
    Const r = c.k(0);
    for (std::size_t k = 0; k < r.v.size(); ++k) {
      const double b = c.k(1).v[k];
      if (b == 0) c.invalid("a division by zero");
      r.v[k] = fmod ? std::fmod(r.v[k], b) : r.v[k] - b * std::floor(r.v[k] / b);
    }
    return {Value{{}, std::move(r)}};
  }
  c.integers = true;
  const op::Expr<float> a = c.x(0);
  Value out = c.wrap(compose::mod(a, c.x(1), fmod, c.free_batch()), a);
  out.type = integral(types[0]) ? types[0] : pb::TensorProto::FLOAT;
  return {out};
}

// GatherND (compose::gather_nd) of fixed shapes; the result has the data's
// element type.
std::vector<Value> gather_nd(NodeCtx& c) {
  const std::int64_t b = c.i("batch_dims", 0);
  if (b < 0) c.invalid("batch_dims " + std::to_string(b) + " is negative");
  if (c.free_batch()) c.unsupported("a GatherND when the batch axis is free");
  c.integers = true;  // integer indices (and integer data) are read exactly
  const int type = c.type_of(0);
  const op::Expr<float> x = c.x(0);
  Value out = c.wrap(compose::gather_nd(x, c.x(1), b), x);
  out.type = type == pb::TensorProto::DOUBLE ? pb::TensorProto::FLOAT : type;
  return {out};
}

}  // namespace magmadnn::onnx::detail
