// The importer's operator table: one builder per ONNX operator, each a thin
// mapping onto magmadnn's layers (Gemm, Conv, BatchNormalization, pooling:
// the initializers become the layer's weights) or op:: functions. Constant
// inputs (shapes, axes) are folded at import time.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "magmadnn/compute/compute.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/layer/layers.h"
#include "magmadnn/onnx/compose.h"
#include "magmadnn/onnx/import_detail.h"

namespace magmadnn::onnx::detail {
namespace {

using V = std::vector<Value>;
using Dims = std::vector<std::int64_t>;

Value konst(Dims dims, std::vector<double> v, int type) {
  Const c;
  c.dims = std::move(dims);
  c.v = std::move(v);
  c.type = type;
  return Value{{}, std::move(c)};
}

op::Var<float> weight(NodeCtx& c, std::size_t i, const std::string& key) {
  return op::Var<float>(std::make_shared<op::Variable<float>>(c.layer_name() + "/" + key, to_tensor(c.k(i))));
}

std::int64_t norm_axis(const NodeCtx& c, std::int64_t axis, std::int64_t rank) {
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) c.invalid("axis out of range for rank " + std::to_string(rank));
  return axis;
}

// A reshape pattern for `dims`, leaving axis 0 free when the batch is.
Dims pattern(const NodeCtx& c, Dims dims, std::int64_t batch_axis = 0) {
  if (!c.static_shapes && batch_axis >= 0 && batch_axis < static_cast<std::int64_t>(dims.size())) {
    dims[static_cast<std::size_t>(batch_axis)] = -1;
  }
  return dims;
}

Value reshape_to(NodeCtx& c, const Dims& dims, std::int64_t batch_axis = 0) {
  if (c.is_const(0)) {
    Const k = c.k(0);
    k.dims = dims;
    return Value{{}, std::move(k)};
  }
  return c.wrap(op::reshape(c.x(0), pattern(c, dims, batch_axis)), c.x(0));
}

std::vector<std::int64_t> as_ints(const Const& k) { return {k.v.begin(), k.v.end()}; }

// Marks element `at` of r as the free batch size (Const::batch_at); one only.
void carry_batch_size(const NodeCtx& c, Const& r, std::int64_t at) {
  if (r.batch_at >= 0) c.unsupported("the batch size, which is free, in two elements of a shape");
  r.batch_at = at;
}

// -- elementwise -------------------------------------------------------------------------------

template <UnaryOp U>
V unary(NodeCtx& c) {
  if ((U == UnaryOp::Neg || U == UnaryOp::Abs) && c.is_const(0) && integral(c.k(0).type)) {  // shape arithmetic
    Const k = c.k(0);
    for (double& x : k.v) x = U == UnaryOp::Neg ? -x : std::abs(x);
    return {Value{{}, std::move(k)}};
  }
  return {c.wrap(op::unary(U, c.x(0)), c.x(0))};
}

// An activation the layers have: an Activation layer (which export writes back).
template <layer::activation_t A>
V activation(NodeCtx& c) {
  if (c.is_const(0)) c.unsupported("an activation of a constant");
  const double alpha = A == layer::LEAKY_RELU ? c.f("alpha", 0.01f) : 0.01;
  return {c.push(layer::make_layer<layer::ActivationLayer<float>>(c.x(0), A, alpha, c.layer_name()).ptr())};
}

template <BinaryOp B>
V binary(NodeCtx& c) {
  // The sum of two computed tensors of one shape: an Add layer (a residual join).
  if (B == BinaryOp::Add && !c.is_const(0) && !c.is_const(1) && c.shape(0) == c.shape(1)) {
    return {c.push(layer::make_layer<layer::AddLayer<float>>(std::vector<op::Expr<float>>{c.x(0), c.x(1)},
                                                             c.layer_name()).ptr())};
  }
  if (c.is_const(0) && c.is_const(1) && c.k(0).numel() == c.k(1).numel()) {  // shape arithmetic
    Const a = c.k(0);
    const Const& b = c.k(1);
    for (std::size_t i = 0; i < a.v.size(); ++i) {
      double& x = a.v[i];
      const double y = b.v[i];
      switch (B) {
        case BinaryOp::Add: x += y; break;
        case BinaryOp::Sub: x -= y; break;
        case BinaryOp::Mul: x *= y; break;
        case BinaryOp::Div: x = a.type == pb::TensorProto::FLOAT ? x / y : std::trunc(x / y); break;
        default: break;
      }
    }
    return {Value{{}, std::move(a)}};
  }
  return {c.wrap(op::detail::binary(B, c.x(0), c.x(1)), c.x(0))};
}

// max(a, b) = a + relu(b - a), min(a, b) = a - relu(a - b): BinaryNode
// computes neither, and this form has the gradients PyTorch gives.
template <bool Max>
V extremum(NodeCtx& c) {
  if (c.inputs() == 1) return {*c.in.at(0)};
  op::Expr<float> y = c.x(0);
  for (std::size_t i = 1; i < c.inputs(); ++i) {
    y = Max ? op::add(y, op::relu(op::sub(c.x(i), y))) : op::sub(y, op::relu(op::sub(y, c.x(i))));
  }
  return {c.wrap(y, c.x(0))};
}

V pow(NodeCtx& c) {
  if (!c.is_const(1) || c.k(1).numel() != 1) c.unsupported("Pow with an exponent other than one known number");
  return {c.wrap(op::pow(c.x(0), static_cast<float>(c.k(1).v[0])), c.x(0))};
}

V clip(NodeCtx& c) {
  double lo = c.f("min", -INFINITY), hi = c.f("max", INFINITY);
  if (c.opset >= 11) {
    if ((c.has(1) && !c.is_const(1)) || (c.has(2) && !c.is_const(2))) return clip_tensors(c);
    lo = c.has(1) ? c.k(1).v.at(0) : -INFINITY;
    hi = c.has(2) ? c.k(2).v.at(0) : INFINITY;
  }
  op::Expr<float> y = c.x(0);
  if (std::isfinite(lo)) y = op::add_scalar(op::relu(op::add_scalar(y, static_cast<float>(-lo))), static_cast<float>(lo));
  if (std::isfinite(hi)) y = op::add_scalar(op::negative(op::relu(op::add_scalar(op::negative(y), static_cast<float>(hi)))),
                                            static_cast<float>(hi));
  return {c.wrap(y, c.x(0))};
}

V sum(NodeCtx& c) {
  op::Expr<float> y = c.x(0);
  for (std::size_t i = 1; i < c.inputs(); ++i) y = op::add(y, c.x(i));
  return {c.wrap(y, c.x(0))};
}


template <bool Log>
V softmax(NodeCtx& c) {
  const Shape s = c.shape(0);
  const std::int64_t rank = s.ndim();
  const auto f = [](const op::Expr<float>& x) { return Log ? op::log_softmax(x) : op::softmax(x); };
  if (c.opset >= 13) {
    const std::int64_t axis = norm_axis(c, c.i("axis", -1), rank);
    if (axis == rank - 1 && !Log) return activation<layer::SOFTMAX>(c);
    if (axis == rank - 1) return {c.wrap(f(c.x(0)), c.x(0))};
    if (rank == 2) return {c.wrap(op::transpose(f(op::transpose(c.x(0)))), c.x(0))};
    std::vector<int> swap(static_cast<std::size_t>(rank));  // the axis and the last exchanged: its own inverse
    std::iota(swap.begin(), swap.end(), 0);
    std::swap(swap[static_cast<std::size_t>(axis)], swap.back());
    return {c.wrap(op::permute(f(op::permute(c.x(0), swap)), swap), c.x(0))};
  }
  const std::int64_t axis = norm_axis(c, c.i("axis", 1), rank);  // opset < 13: rows of the 2-D coercion
  std::int64_t rows = 1, cols = 1;
  for (std::int64_t k = 0; k < rank; ++k) (k < axis ? rows : cols) *= s[k];
  op::Expr<float> y = f(op::reshape(c.x(0), Dims{c.static_shapes ? rows : -1, cols}));
  return {c.wrap(op::reshape(y, pattern(c, s.dims())), c.x(0))};
}

V gelu(NodeCtx& c) {  // opset 20's operator, and the exact erf form of older opsets (import.cpp)
  if (c.s("approximate", "none") != "none") c.unsupported("approximate " + c.s("approximate", "") + " (only the exact form)");
  return activation<layer::GELU>(c);
}

// -- linear algebra ----------------------------------------------------------------------------

V matmul(NodeCtx& c) {
  if (c.shape(0).ndim() != 2 || c.shape(1).ndim() != 2) c.unsupported("MatMul of other than two matrices");
  return {c.wrap(op::matmul(c.x(0), c.x(1)), c.x(0))};
}

V gemm(NodeCtx& c) {
  const bool ta = c.i("transA", 0) != 0, tb = c.i("transB", 0) != 0;
  const float alpha = c.f("alpha", 1.0f), beta = c.f("beta", 1.0f);
  const bool bias_ok = !c.has(2) || (c.is_const(2) && c.k(2).dims.size() <= 1);
  if (!ta && alpha == 1.0f && beta == 1.0f && c.is_const(1) && bias_ok && c.k(1).dims.size() == 2) {
    Const w = c.k(1);
    if (!tb) {  // W {in, out} -> {out, in}
      const std::int64_t in = w.dims[0], out = w.dims[1];
      std::vector<double> t(w.v.size());
      for (std::int64_t i = 0; i < in; ++i)
        for (std::int64_t o = 0; o < out; ++o) t[o * in + i] = w.v[i * out + o];
      w.v = std::move(t);
      w.dims = {out, in};
    }
    auto W = op::Var<float>(std::make_shared<op::Variable<float>>(c.layer_name() + "/W", to_tensor(w)));
    op::Var<float> b;
    if (c.has(2)) {
      Const bc = c.k(2);
      if (bc.numel() != w.dims[0]) {
        if (bc.numel() != 1) c.invalid("C has " + std::to_string(bc.numel()) + " values for " +
                                       std::to_string(w.dims[0]) + " outputs");
        bc.v.assign(static_cast<std::size_t>(w.dims[0]), bc.v[0]);
      }
      bc.dims = {w.dims[0]};
      b = op::Var<float>(std::make_shared<op::Variable<float>>(c.layer_name() + "/b", to_tensor(bc)));
    }
    return {c.push(layer::make_layer<layer::FullyConnectedLayer<float>>(c.x(0), W, b, c.layer_name()).ptr())};
  }
  op::Expr<float> y = op::matmul(c.x(0), c.x(1), ta, tb);
  if (alpha != 1.0f) y = op::scalarproduct(alpha, y);
  if (c.has(2)) y = op::add(y, beta == 1.0f ? c.x(2) : op::scalarproduct(beta, c.x(2)));
  return {c.wrap(y, c.x(0))};
}

// Symmetric padding of a 2-D window from pads / auto_pad; refuses others.
std::pair<std::int64_t, std::int64_t> padding(NodeCtx& c, const Dims& kernel, const Dims& strides,
                                              const Dims& dil) {
  const std::string ap = c.s("auto_pad", "NOTSET");
  if (ap == "VALID") return {0, 0};
  if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    const Shape s = c.shape(0);
    std::int64_t p[2];
    for (int k = 0; k < 2; ++k) {
      const std::int64_t in = s[2 + k], out = (in + strides[k] - 1) / strides[k];
      const std::int64_t total = std::max<std::int64_t>(0, (out - 1) * strides[k] + (kernel[k] - 1) * dil[k] + 1 - in);
      if (total % 2) c.unsupported("auto_pad " + ap + " with an odd total padding");
      p[k] = total / 2;
    }
    return {p[0], p[1]};
  }
  if (ap != "NOTSET") c.invalid("auto_pad " + ap);
  const Dims pads = c.ints("pads", {0, 0, 0, 0});
  if (pads.size() != 4) c.unsupported("pads of other than 2 spatial axes");
  if (pads[0] != pads[2] || pads[1] != pads[3]) c.unsupported("asymmetric pads");
  return {pads[0], pads[1]};
}

V conv(NodeCtx& c) {
  const Shape w = c.shape(1);
  if (w.ndim() != 4) c.unsupported("Conv of other than 2 spatial axes");
  const Dims strides = c.ints("strides", {1, 1}), dil = c.ints("dilations", {1, 1});
  const auto [ph, pw] = padding(c, {w[2], w[3]}, strides, dil);
  conv::ConvParams g;
  g.pad_h = ph, g.pad_w = pw;
  g.stride_h = strides[0], g.stride_w = strides[1];
  g.dilation_h = dil[0], g.dilation_w = dil[1];
  g.groups = c.i("group", 1);
  if (c.is_const(1) && (!c.has(2) || c.is_const(2))) {
    op::Var<float> b = c.has(2) ? weight(c, 2, "b") : op::Var<float>();
    return {c.push(layer::make_layer<layer::Conv2dLayer<float>>(c.x(0), weight(c, 1, "W"), b, g, conv::Algo::Auto,
                                                                c.layer_name()).ptr())};
  }
  return {c.wrap(c.has(2) ? op::conv2d(c.x(0), c.x(1), c.x(2), g) : op::conv2d(c.x(0), c.x(1), g), c.x(0))};
}

V batchnorm(NodeCtx& c) {
  if (c.i("training_mode", 0) != 0) c.unsupported("training_mode 1 (only inference BatchNormalization)");
  bool known = true;
  for (std::size_t i = 1; i < 5; ++i) known = known && c.is_const(i);
  if (!known) {  // statistics fed at run time: (x - mean) / sqrt(var + eps) * scale + bias, per channel
    const Shape s = c.shape(0);
    Dims per(static_cast<std::size_t>(s.ndim()), 1);
    per[1] = s[1];
    const auto ch = [&](std::size_t i) { return op::reshape(c.x(i), per); };
    const auto inv = op::pow(op::add_scalar(ch(4), c.f("epsilon", 1e-5f)), -0.5f);
    return {c.wrap(op::add(op::product(op::product(op::sub(c.x(0), ch(3)), inv), ch(1)), ch(2)), c.x(0))};
  }
  auto l = layer::make_layer<layer::BatchNormLayer<float>>(c.x(0), weight(c, 1, "gamma"), weight(c, 2, "beta"),
                                                           1.0 - c.f("momentum", 0.9f), c.f("epsilon", 1e-5f),
                                                           c.layer_name());
  l->running_mean() = to_tensor(c.k(3));
  l->running_var() = to_tensor(c.k(4));
  return {c.push(l.ptr())};
}

template <conv::PoolMode M>
V pool(NodeCtx& c) {
  const Dims k = c.ints("kernel_shape");
  if (k.size() != 2) c.unsupported("pooling of other than 2 spatial axes");
  if (c.i("ceil_mode", 0) != 0) c.unsupported("ceil_mode 1");
  if (c.i("storage_order", 0) != 0) c.unsupported("storage_order 1");
  const Dims dil = c.ints("dilations", {1, 1});
  if (dil != Dims{1, 1}) c.unsupported("dilations other than 1");
  const Dims strides = c.ints("strides", {1, 1});
  const auto [ph, pw] = padding(c, k, strides, dil);
  conv::PoolParams p;
  p.kernel_h = k[0], p.kernel_w = k[1];
  p.pad_h = ph, p.pad_w = pw;
  p.stride_h = strides[0], p.stride_w = strides[1];
  p.mode = M;
  p.count_include_pad = c.i("count_include_pad", 0) != 0;
  return {c.push(layer::make_layer<layer::PoolingLayer<float>>(c.x(0), p, c.layer_name()).ptr())};
}

template <conv::PoolMode M>
V global_pool(NodeCtx& c) {
  const Shape s = c.shape(0);
  if (s.ndim() != 4) c.unsupported("global pooling of other than {N, C, H, W}");
  conv::PoolParams p;
  p.kernel_h = p.stride_h = s[2];
  p.kernel_w = p.stride_w = s[3];
  p.pad_h = p.pad_w = 0;
  p.mode = M;
  return {c.push(layer::make_layer<layer::PoolingLayer<float>>(c.x(0), p, c.layer_name()).ptr())};
}

// -- shapes ------------------------------------------------------------------------------------

V identity(NodeCtx& c) { return {*c.in.at(0)}; }

V dropout(NodeCtx& c) {
  if (c.has(2) && c.k(2).v.at(0) != 0.0) c.unsupported("training_mode true (only inference Dropout)");
  if (c.node.output_size() < 2 || c.node.output(1).empty()) return {*c.in.at(0)};
  if (!c.is_const(0) && c.free_batch()) c.unsupported("the mask output of a tensor whose batch axis is free");
  const Dims d = c.is_const(0) ? c.k(0).dims : c.shape(0).dims();
  Const mask;  // inference keeps every element
  mask.dims = d;
  mask.type = pb::TensorProto::BOOL;
  mask.v.assign(static_cast<std::size_t>(mask.numel()), 1.0);
  return {*c.in.at(0), Value{{}, std::move(mask)}};
}

V flatten(NodeCtx& c) {
  const Shape s = c.shape(0);
  const std::int64_t axis = c.i("axis", 1) < 0 ? c.i("axis", 1) + s.ndim() : c.i("axis", 1);
  if (axis == 1 && !c.is_const(0) && s.ndim() >= 2) {
    return {c.push(layer::make_layer<layer::FlattenLayer<float>>(c.x(0), c.layer_name()).ptr())};
  }
  std::int64_t rows = 1, cols = 1;
  for (std::int64_t k = 0; k < s.ndim(); ++k) (k < axis ? rows : cols) *= s[k];
  return {reshape_to(c, {rows, cols}, axis >= 1 ? 0 : -1)};
}

// The size that -1 in d stands for, axis 0 of d and of s being the free
// batch axis (so the other axes' sizes are known).
std::int64_t rest_of_batch(const NodeCtx& c, const Shape& s, const Dims& d) {
  std::int64_t n = 1, known = 1;
  for (std::int64_t k = 1; k < s.ndim(); ++k) n *= s[k];
  for (std::size_t k = 1; k < d.size(); ++k) known *= d[k] == -1 ? 1 : d[k];
  if (known == 0 || n % known != 0) {
    c.invalid("shape does not divide the input's " + std::to_string(n) + " elements per sample");
  }
  return n / known;
}

V reshape(NodeCtx& c) {
  const Shape s = c.shape(0);
  const Const& shape = c.k(1);
  Dims d = as_ints(shape);
  const bool allowzero = c.i("allowzero", 0) != 0;
  std::int64_t batch_axis = -1;
  for (std::size_t k = 0; k < d.size(); ++k) {
    if (d[k] == 0 && !allowzero) {
      if (static_cast<std::int64_t>(k) >= s.ndim()) c.invalid("shape copies axis " + std::to_string(k) + " of a lower-rank input");
      d[k] = s[static_cast<std::int64_t>(k)];
      if (k == 0) batch_axis = 0;
    }
  }
  if (shape.batch_at > 0 || (shape.batch_at == 0 && c.is_const(0))) {
    c.unsupported("the batch size, which is free, at axis " + std::to_string(shape.batch_at) + " of a reshape");
  }
  if (shape.batch_at == 0) batch_axis = 0;
  const bool free_axis0 = batch_axis == 0 && c.free_batch() && !c.is_const(0);
  if (free_axis0 && std::count(d.begin(), d.end(), -1) == 1) {  // (N, -1): -1 is what one sample holds
    *std::find(d.begin() + 1, d.end(), -1) = rest_of_batch(c, s, d);
  }
  if (std::count(d.begin(), d.end(), -1) > 0) batch_axis = -1;  // the free axis already
  if (c.is_const(0)) {  // resolve -1 for a constant
    const std::int64_t n = c.k(0).numel(), known = std::accumulate(d.begin(), d.end(), std::int64_t{1},
                                                                   [](std::int64_t a, std::int64_t b) { return b == -1 ? a : a * b; });
    for (auto& x : d) if (x == -1) x = known ? n / known : 0;
  }
  return {reshape_to(c, d, batch_axis)};
}

V transpose(NodeCtx& c) {
  const std::int64_t rank = c.shape(0).ndim();
  Dims reversed(static_cast<std::size_t>(rank));
  std::iota(reversed.rbegin(), reversed.rend(), 0);  // ONNX's default: the axes reversed
  const Dims perm = c.ints("perm", reversed);
  if (static_cast<std::int64_t>(perm.size()) != rank) c.invalid("perm names " + std::to_string(perm.size()) +
                                                                " axes for rank " + std::to_string(rank));
  if (rank == 2 && perm == Dims{1, 0}) return {c.wrap(op::transpose(c.x(0)), c.x(0))};
  return {c.wrap(op::permute(c.x(0), std::vector<int>(perm.begin(), perm.end())), c.x(0))};
}

V concat(NodeCtx& c) {
  bool all_const = true;
  for (std::size_t i = 0; i < c.inputs(); ++i) all_const = all_const && c.is_const(i);
  const std::int64_t rank = c.shape(0).ndim();
  const std::int64_t axis = norm_axis(c, c.i("axis", 0), rank);
  if (all_const && rank == 1) {
    Const r = c.k(0);
    for (std::size_t i = 1; i < c.inputs(); ++i) {
      if (c.k(i).batch_at >= 0) carry_batch_size(c, r, static_cast<std::int64_t>(r.v.size()) + c.k(i).batch_at);
      r.v.insert(r.v.end(), c.k(i).v.begin(), c.k(i).v.end());
    }
    r.dims = {static_cast<std::int64_t>(r.v.size())};
    return {Value{{}, std::move(r)}};
  }
  std::vector<op::Expr<float>> xs;
  for (std::size_t i = 0; i < c.inputs(); ++i) xs.push_back(c.x(i));
  if (axis == 1 && rank >= 2 && !all_const && xs.size() >= 2) {  // channels: a Concat layer
    return {c.push(layer::make_layer<layer::ConcatLayer<float>>(xs, c.layer_name()).ptr())};
  }
  return {c.wrap(op::concat(xs, axis), c.x(0))};
}

Value from_attr_tensor(NodeCtx& c, const pb::TensorProto& t) { return Value{{}, to_const(t, c.where + ": value")}; }

V constant(NodeCtx& c) {
  if (const auto* a = c.attr("value")) return {from_attr_tensor(c, a->t())};
  if (const auto* a = c.attr("value_float")) return {konst({}, {a->f()}, pb::TensorProto::FLOAT)};
  if (const auto* a = c.attr("value_int")) return {konst({}, {static_cast<double>(a->i())}, pb::TensorProto::INT64)};
  if (const auto* a = c.attr("value_floats")) {
    return {konst({a->floats_size()}, {a->floats().begin(), a->floats().end()}, pb::TensorProto::FLOAT)};
  }
  if (const auto* a = c.attr("value_ints")) {
    return {konst({a->ints_size()}, {a->ints().begin(), a->ints().end()}, pb::TensorProto::INT64)};
  }
  c.unsupported("a Constant without value, value_float(s) or value_int(s)");
}

// A tensor of the shape input 0 holds (known at import time), every element
// the attribute `value` (a one-element tensor; float 0 by default).
V constant_of_shape(NodeCtx& c) {
  const Dims dims = c.has(0) ? as_ints(c.k(0)) : Dims{};
  for (std::int64_t d : dims) if (d < 0) c.invalid("negative dimension " + std::to_string(d));
  Const v = konst({}, {0.0}, pb::TensorProto::FLOAT).k.value();
  if (const auto* a = c.attr("value")) v = from_attr_tensor(c, a->t()).k.value();
  if (v.numel() != 1) c.invalid("value holds " + std::to_string(v.numel()) + " elements, not one");
  Const r;
  r.type = v.type;
  r.dims = dims;
  r.v.assign(static_cast<std::size_t>(r.numel()), v.v[0]);
  return {Value{{}, std::move(r)}};
}

V cast_to(NodeCtx& c, int to) {
  if (c.is_const(0)) {
    Const k = c.k(0);
    if (integral(to)) for (double& x : k.v) x = std::trunc(x);
    k.type = to;
    return {Value{{}, std::move(k)}};
  }
  if (to != pb::TensorProto::FLOAT && to != pb::TensorProto::DOUBLE) {
    c.unsupported("Cast of a computed tensor to other than float or double (computed in float)");
  }
  return {*c.in.at(0)};
}

V cast(NodeCtx& c) { return cast_to(c, static_cast<int>(c.i("to", pb::TensorProto::FLOAT))); }

// CastLike: Cast to input 1's element type.
V cast_like(NodeCtx& c) { return cast_to(c, c.type_of(1)); }

// Shape, folded; of a tensor whose batch axis is free, its element 0 stands
// for the batch size (Const::batch_at), which only shape arithmetic that
// ends in a Reshape may read.
V shape(NodeCtx& c) {
  Dims d = c.is_const(0) ? c.k(0).dims : c.shape(0).dims();
  const auto rank = static_cast<std::int64_t>(d.size());
  std::int64_t start = c.i("start", 0), end = c.i("end", rank);
  start = std::clamp<std::int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<std::int64_t>(end < 0 ? end + rank : end, 0, rank);
  Dims r(d.begin() + start, d.begin() + std::max(start, end));
  Value v = konst({static_cast<std::int64_t>(r.size())}, {r.begin(), r.end()}, pb::TensorProto::INT64);
  if (!c.is_const(0) && c.free_batch() && start == 0 && end > 0) v.k->batch_at = 0;
  return {v};
}

V size(NodeCtx& c) {
  if (!c.is_const(0) && !c.static_shapes) c.unsupported("Size of a tensor whose batch axis is free");
  const std::int64_t n = c.is_const(0) ? c.k(0).numel() : c.shape(0).numel();
  return {konst({}, {static_cast<double>(n)}, pb::TensorProto::INT64)};
}

// Slice of a 1-D constant (a shape): folded.
V slice(NodeCtx& c) {
  if (!c.is_const(0) || c.k(0).dims.size() != 1) return slice_computed(c);
  const Const& d = c.k(0);
  const auto n = static_cast<std::int64_t>(d.v.size());
  Dims starts = c.opset >= 10 ? as_ints(c.k(1)) : c.ints("starts"), ends = c.opset >= 10 ? as_ints(c.k(2)) : c.ints("ends");
  const Dims steps = c.opset >= 10 && c.has(4) ? as_ints(c.k(4)) : Dims{1};
  if (starts.size() != 1 || ends.size() != 1 || steps.size() != 1 || steps[0] == 0) c.unsupported("this Slice");
  const std::int64_t step = steps[0];
  const auto clampi = [&](std::int64_t i, bool end) {  // ONNX's rules: past either end is clamped
    if (i < 0) i = i < -n ? -n - 1 : i + n;
    if (step > 0) return std::clamp<std::int64_t>(i, 0, n);
    return std::clamp<std::int64_t>(i, end ? -1 : 0, n - 1);
  };
  Const r;
  r.type = d.type;
  for (std::int64_t i = clampi(starts[0], false), e = clampi(ends[0], true); step > 0 ? i < e : i > e; i += step) {
    r.v.push_back(d.v[static_cast<std::size_t>(i)]);
  }
  r.dims = {static_cast<std::int64_t>(r.v.size())};
  return {Value{{}, std::move(r)}};
}

V gather(NodeCtx& c) {
  if (!c.is_const(0) || !c.is_const(1)) return gather_computed(c);
  const Const& data = c.k(0);
  const Const& idx = c.k(1);
  const auto rank = static_cast<std::int64_t>(data.dims.size());
  const std::int64_t axis = norm_axis(c, c.i("axis", 0), rank);
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t k = 0; k < axis; ++k) outer *= data.dims[k];
  for (std::int64_t k = axis + 1; k < rank; ++k) inner *= data.dims[k];
  const std::int64_t n = data.dims[axis];
  Const r;
  r.type = data.type;
  r.dims.assign(data.dims.begin(), data.dims.begin() + axis);
  r.dims.insert(r.dims.end(), idx.dims.begin(), idx.dims.end());
  r.dims.insert(r.dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  for (std::int64_t o = 0; o < outer; ++o) {
    for (double iv : idx.v) {
      auto i = static_cast<std::int64_t>(iv);
      if (i < 0) i += n;
      if (i < 0 || i >= n) c.invalid("index " + std::to_string(static_cast<std::int64_t>(iv)) + " out of range");
      for (std::int64_t k = 0; k < inner; ++k) {
        if ((o * n + i) * inner + k == data.batch_at) carry_batch_size(c, r, static_cast<std::int64_t>(r.v.size()));
        r.v.push_back(data.v[(o * n + i) * inner + k]);
      }
    }
  }
  return {Value{{}, std::move(r)}};
}

// Range of a known start, limit and delta: folded. Computed at run time,
// they are refused: the result's length would depend on their values.
V range(NodeCtx& c) {
  for (std::size_t i = 0; i < 3; ++i) {
    if (!c.is_const(i)) c.unsupported("input " + std::to_string(i) + " '" + c.node.input(static_cast<int>(i)) +
                                      "' computed at run time (the length of a Range must be known at import time)");
    if (c.k(i).numel() != 1) c.invalid("input " + std::to_string(i) + " holds " + std::to_string(c.k(i).numel()) +
                                       " values, not one");
  }
  const double start = c.k(0).v[0], limit = c.k(1).v[0], delta = c.k(2).v[0];
  if (delta == 0) c.invalid("delta is 0");
  const auto n = static_cast<std::int64_t>(std::max(std::ceil((limit - start) / delta), 0.0));
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) v[static_cast<std::size_t>(k)] = start + static_cast<double>(k) * delta;
  return {konst({n}, std::move(v), c.k(0).type)};
}

Dims axes_of(NodeCtx& c, std::size_t input) {
  if (c.opset >= 13 && c.has(input)) return as_ints(c.k(input));
  return c.ints("axes");
}

V unsqueeze(NodeCtx& c) {
  Dims d = c.is_const(0) ? c.k(0).dims : c.shape(0).dims();
  Dims axes = axes_of(c, 1);
  const auto rank = static_cast<std::int64_t>(d.size() + axes.size());
  for (auto& a : axes) a = norm_axis(c, a, rank);
  std::sort(axes.begin(), axes.end());
  std::int64_t batch = 0;
  for (std::int64_t a : axes) {
    d.insert(d.begin() + a, 1);
    if (a <= batch) ++batch;
  }
  return {reshape_to(c, d, batch)};
}

V squeeze(NodeCtx& c) {
  const Dims in = c.is_const(0) ? c.k(0).dims : c.shape(0).dims();
  const auto rank = static_cast<std::int64_t>(in.size());
  Dims axes = axes_of(c, 1);
  for (auto& a : axes) a = norm_axis(c, a, rank);
  if (axes.empty()) {
    if (!c.static_shapes && !c.is_const(0)) c.unsupported("Squeeze without axes of a tensor whose batch axis is free");
    for (std::int64_t k = 0; k < rank; ++k) if (in[k] == 1) axes.push_back(k);
  }
  Dims d;
  std::int64_t batch = 0;
  for (std::int64_t k = 0; k < rank; ++k) {
    if (std::find(axes.begin(), axes.end(), k) != axes.end()) {
      if (k == 0) batch = -1;
      continue;
    }
    d.push_back(in[k]);
  }
  return {reshape_to(c, d, batch)};
}

// The table, sorted by name (find_op bisects it).
const OpEntry kOps[] = {
    {"Abs", unary<UnaryOp::Abs>},
    {"Add", binary<BinaryOp::Add>},
    {"And", logical<0>},
    {"ArgMax", arg_extremum<false>},
    {"ArgMin", arg_extremum<true>},
    {"AveragePool", pool<conv::PoolMode::Average>},
    {"BatchNormalization", batchnorm},
    {"Cast", cast},
    {"CastLike", cast_like},
    {"Celu", celu},
    {"Clip", clip},
    {"Concat", concat},
    {"Constant", constant},
    {"ConstantOfShape", constant_of_shape},
    {"Conv", conv},
    {"ConvTranspose", conv_transpose},
    {"Cosh", sinh_cosh<true>},
    {"CumSum", cumsum},
    {"DepthToSpace", depth_to_space},
    {"Div", binary<BinaryOp::Div>},
    {"Dropout", dropout},
    {"Elu", elu},
    {"Equal", compare<4>},
    {"Exp", unary<UnaryOp::Exp>},
    {"EyeLike", eye_like},
    {"Flatten", flatten},
    {"Gather", gather},
    {"GatherElements", gather_elements},
    {"GatherND", gather_nd},
    {"Gelu", gelu},
    {"Gemm", gemm},
    {"GlobalAveragePool", global_pool<conv::PoolMode::Average>},
    {"GlobalMaxPool", global_pool<conv::PoolMode::Max>},
    {"Greater", compare<0>},
    {"GreaterOrEqual", compare<2>},
    {"HardSigmoid", hard_sigmoid},
    {"HardSwish", hard_swish},
    {"Hardmax", hardmax},
    {"Identity", identity},
    {"InstanceNormalization", instance_norm},
    {"LRN", lrn},
    {"LayerNormalization", layer_normalization},
    {"LeakyRelu", activation<layer::LEAKY_RELU>},
    {"Less", compare<1>},
    {"LessOrEqual", compare<3>},
    {"Log", unary<UnaryOp::Log>},
    {"LogSoftmax", softmax<true>},
    {"MatMul", matmul},
    {"Max", extremum<true>},
    {"MaxPool", pool<conv::PoolMode::Max>},
    {"Mean", mean},
    {"MeanVarianceNormalization", mean_variance_norm},
    {"Min", extremum<false>},
    {"Mod", mod},
    {"Mul", binary<BinaryOp::Mul>},
    {"Neg", unary<UnaryOp::Neg>},
    {"NegativeLogLikelihoodLoss", class_loss<false>},
    {"Not", logical<3>},
    {"Or", logical<1>},
    {"PRelu", prelu},
    {"Pow", pow},
    {"Range", range},
    {"Reciprocal", unary<UnaryOp::Reciprocal>},
    {"ReduceL1", reduce_op<static_cast<int>(compose::Reduce::L1)>},
    {"ReduceL2", reduce_op<static_cast<int>(compose::Reduce::L2)>},
    {"ReduceLogSum", reduce_op<static_cast<int>(compose::Reduce::LogSum)>},
    {"ReduceLogSumExp", reduce_op<static_cast<int>(compose::Reduce::LogSumExp)>},
    {"ReduceMax", reduce_op<static_cast<int>(compose::Reduce::Max)>},
    {"ReduceMean", reduce_op<static_cast<int>(compose::Reduce::Mean)>},
    {"ReduceMin", reduce_op<static_cast<int>(compose::Reduce::Min)>},
    {"ReduceProd", reduce_op<static_cast<int>(compose::Reduce::Prod)>},
    {"ReduceSum", reduce_op<static_cast<int>(compose::Reduce::Sum)>},
    {"ReduceSumSquare", reduce_op<static_cast<int>(compose::Reduce::SumSquare)>},
    {"Relu", activation<layer::RELU>},
    {"Reshape", reshape},
    {"Selu", selu},
    {"Shape", shape},
    {"Shrink", shrink},
    {"Sigmoid", activation<layer::SIGMOID>},
    {"Sign", sign},
    {"Sinh", sinh_cosh<false>},
    {"Size", size},
    {"Slice", slice},
    {"Softmax", softmax<false>},
    {"SoftmaxCrossEntropyLoss", class_loss<true>},
    {"Softplus", activation<layer::SOFTPLUS>},
    {"Softsign", softsign},
    {"SpaceToDepth", space_to_depth},
    {"Split", split},
    {"Sqrt", unary<UnaryOp::Sqrt>},
    {"Squeeze", squeeze},
    {"Sub", binary<BinaryOp::Sub>},
    {"Sum", sum},
    {"Tanh", activation<layer::TANH>},
    {"ThresholdedRelu", thresholded_relu},
    {"Transpose", transpose},
    {"Trilu", trilu},
    {"Unsqueeze", unsqueeze},
    {"Where", where},
    {"Xor", logical<2>},
};

}  // namespace

const std::vector<OpEntry>& op_table() {
  static const std::vector<OpEntry> table(std::begin(kOps), std::end(kOps));
  return table;
}

const OpEntry* find_op(const std::string& name) {
  const auto& t = op_table();
  const auto it = std::lower_bound(t.begin(), t.end(), name,
                                   [](const OpEntry& e, const std::string& n) { return e.name < n; });
  return it != t.end() && it->name == name ? &*it : nullptr;
}

}  // namespace magmadnn::onnx::detail
