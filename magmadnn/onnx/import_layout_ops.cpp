// The importer's builders for layout and normalization operators: Slice
// and Split of computed tensors (op::slice), DepthToSpace, SpaceToDepth
// (reshape and op::permute), InstanceNormalization, MeanVariance-
// Normalization and LRN (compose.h), EyeLike (a constant).
#include <algorithm>
#include <numeric>

#include "magmadnn/compute/variable.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/onnx/compose.h"
#include "magmadnn/onnx/import_detail.h"

namespace magmadnn::onnx::detail {
namespace {

using Dims = std::vector<std::int64_t>;

Dims ints_of(const Const& k) { return {k.v.begin(), k.v.end()}; }

std::int64_t axis_of(const NodeCtx& c, std::int64_t a, std::int64_t rank) {
  if (a < 0) a += rank;
  if (a < 0 || a >= rank) c.invalid("axis out of range for rank " + std::to_string(rank));
  return a;
}

// An axis a slice cuts: the batch axis only when its extent is known.
std::int64_t cut_axis(const NodeCtx& c, std::int64_t a, std::int64_t rank) {
  a = axis_of(c, a, rank);
  if (a == 0 && c.free_batch()) c.unsupported("a cut of the free batch axis (its extent is unknown)");
  return a;
}

// ONNX's clamping of a start or end index into 0 .. n (steps of 1).
std::int64_t clamp_index(std::int64_t i, std::int64_t n) {
  if (i < 0) i = i < -n ? 0 : i + n;
  return std::min(i, n);
}

// A known scale or bias (input i) as a trainable weight, else the input.
op::Expr<float> param(NodeCtx& c, std::size_t i, const std::string& key,
                      std::vector<std::pair<std::string, op::Var<float>>>& weights) {
  if (!c.is_const(i)) return c.x(i);
  auto v = op::Var<float>(std::make_shared<op::Variable<float>>(c.layer_name() + "/" + key, to_tensor(c.k(i))));
  weights.emplace_back(key, v);
  return v;
}

}  // namespace

std::vector<Value> slice_computed(NodeCtx& c) {
  const Shape s = c.shape(0);
  const std::int64_t rank = s.ndim();
  const bool inputs = c.opset >= 10;
  const Dims starts = inputs ? ints_of(c.k(1)) : c.ints("starts"), ends = inputs ? ints_of(c.k(2)) : c.ints("ends");
  Dims axes(starts.size());
  std::iota(axes.begin(), axes.end(), 0);
  if (inputs && c.has(3)) axes = ints_of(c.k(3));
  if (!inputs) axes = c.ints("axes", axes);
  const Dims steps = inputs && c.has(4) ? ints_of(c.k(4)) : Dims(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    c.invalid("starts, ends, axes and steps of different lengths");
  }
  op::Expr<float> y = c.x(0);
  for (std::size_t j = 0; j < starts.size(); ++j) {
    if (steps[j] != 1) c.unsupported("a Slice of a computed tensor with steps other than 1");
    const std::int64_t a = cut_axis(c, axes[j], rank), n = s[a];
    const std::int64_t b = clamp_index(starts[j], n), e = std::max(b, clamp_index(ends[j], n));
    y = op::slice(y, a, b, e);
  }
  return {c.wrap(y, c.x(0))};
}

std::vector<Value> split(NodeCtx& c) {
  const Shape s = c.shape(0);
  const std::int64_t a = cut_axis(c, c.i("axis", 0), s.ndim()), n = s[a];
  const auto parts = static_cast<std::int64_t>(c.node.output_size());
  Dims sizes;
  if (c.opset >= 13 && c.has(1)) sizes = ints_of(c.k(1));
  else if (c.opset < 13 && c.attr("split")) sizes = c.ints("split");
  else {  // equal parts, the last smaller when they do not divide (opset 18)
    const std::int64_t chunk = (n + parts - 1) / parts;
    for (std::int64_t k = 0; k < parts; ++k) sizes.push_back(std::max<std::int64_t>(0, std::min(chunk, n - k * chunk)));
  }
  if (static_cast<std::int64_t>(sizes.size()) != parts || std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0}) != n) {
    c.invalid("split sizes do not add up to the axis' " + std::to_string(n) + " in " + std::to_string(parts) + " parts");
  }
  std::vector<Value> out;
  std::int64_t at = 0;
  for (std::int64_t size : sizes) {
    out.push_back(c.wrap(op::slice(c.x(0), a, at, at + size), c.x(0)));
    at += size;
  }
  return out;
}

std::vector<Value> depth_to_space(NodeCtx& c) {
  const std::string mode = c.s("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") c.invalid("mode '" + mode + "'");
  return {c.wrap(compose::depth_to_space(c.x(0), c.i("blocksize", 1), mode == "CRD", c.free_batch()), c.x(0))};
}

std::vector<Value> space_to_depth(NodeCtx& c) {
  return {c.wrap(compose::space_to_depth(c.x(0), c.i("blocksize", 1), c.free_batch()), c.x(0))};
}

// Layer normalization of each (sample, channel) over the spatial axes,
// then a scale and bias per channel (known ones trainable).
std::vector<Value> instance_norm(NodeCtx& c) {
  const op::Expr<float> x = c.x(0);
  Dims per(static_cast<std::size_t>(c.shape(0).ndim() - 1), 1);
  per[0] = c.shape(0)[1];
  std::vector<std::pair<std::string, op::Var<float>>> weights;
  const op::Expr<float> scale = op::reshape(param(c, 1, "scale", weights), per);
  const op::Expr<float> bias = op::reshape(param(c, 2, "bias", weights), per);
  return {c.wrap(compose::layer_norm(x, scale, bias, 2, c.f("epsilon", 1e-5f), c.free_batch())[0], x, weights)};
}

std::vector<Value> mean_variance_norm(NodeCtx& c) {
  const std::int64_t rank = c.shape(0).ndim();
  Dims axes = c.ints("axes", {0, 2, 3});
  for (auto& a : axes) a = axis_of(c, a, rank);
  std::sort(axes.begin(), axes.end());
  if (c.free_batch() && !axes.empty() && axes[0] == 0) c.unsupported("a normalization over the free batch axis");
  return {c.wrap(compose::mean_variance_norm(c.x(0), axes, c.free_batch()), c.x(0))};
}

std::vector<Value> lrn(NodeCtx& c) {
  if (!c.attr("size")) c.invalid("attribute size is missing");
  return {c.wrap(compose::lrn(c.x(0), c.i("size", 1), c.f("alpha", 1e-4f), c.f("beta", 0.75f), c.f("bias", 1.0f),
                              c.free_batch()),
                 c.x(0))};
}

// EyeLike: ones on the k-th diagonal of a matrix of input 0's (known) shape.
std::vector<Value> eye_like(NodeCtx& c) {
  if (!c.is_const(0) && c.free_batch()) c.unsupported("EyeLike of a tensor whose batch axis is free");
  const Dims d = c.is_const(0) ? c.k(0).dims : c.shape(0).dims();
  if (d.size() != 2) c.invalid("EyeLike of a tensor of rank " + std::to_string(d.size()) + " (2 needed)");
  const std::int64_t k = c.i("k", 0);
  Const r;
  r.dims = d;
  r.type = static_cast<int>(c.i("dtype", c.type_of(0)));
  for (std::int64_t i = 0; i < d[0]; ++i)
    for (std::int64_t j = 0; j < d[1]; ++j) r.v.push_back(j - i == k ? 1.0 : 0.0);
  return {Value{{}, std::move(r)}};
}

// ConvTranspose (2 spatial axes): op::conv_transpose2d without padding to
// the full output (output_padding included), then the pads, begin and end
// apart (given, or from output_shape or auto_pad), cut off by op::slice.
// A known W and B become the node's trainable weights.
std::vector<Value> conv_transpose(NodeCtx& c) {
  const Shape xs = c.shape(0), ws = c.shape(1);
  if (ws.ndim() != 4 || xs.ndim() != 4) c.unsupported("ConvTranspose of other than 2 spatial axes");
  const Dims strides = c.ints("strides", {1, 1}), dil = c.ints("dilations", {1, 1});
  const Dims opad = c.ints("output_padding", {0, 0}), pads = c.ints("pads", {0, 0, 0, 0});
  const std::string ap = c.s("auto_pad", "NOTSET");
  Dims full(2), begin{pads[0], pads[1]}, end{pads[2], pads[3]};
  for (std::size_t i = 0; i < 2; ++i) {
    if (opad[i] >= strides[i]) c.invalid("output_padding not below the stride");
    full[i] = strides[i] * (xs[2 + i] - 1) + (ws[2 + i] - 1) * dil[i] + 1 + opad[i];
    const bool given = c.attr("output_shape") != nullptr;
    if (!given && ap != "SAME_UPPER" && ap != "SAME_LOWER") continue;
    const Dims os = c.ints("output_shape");
    const std::int64_t out = given ? os[os.size() - 2 + i] : xs[2 + i] * strides[i], total = full[i] - out;
    if (total < 0) {  // more than the full output: rows of zeros (plus bias) at the end, as output_padding
      if (opad[i] - total >= strides[i]) c.unsupported("an output_shape past the stride's output padding");
      full[i] -= total;
      begin[i] = end[i] = 0;
      continue;
    }
    begin[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
    end[i] = total - begin[i];
  }
  conv::ConvParams g;
  g.stride_h = strides[0], g.stride_w = strides[1];
  g.dilation_h = dil[0], g.dilation_w = dil[1];
  g.groups = c.i("group", 1);
  std::vector<std::pair<std::string, op::Var<float>>> weights;
  const op::Expr<float> w = param(c, 1, "W", weights), b = c.has(2) ? param(c, 2, "B", weights) : op::Expr<float>();
  op::Expr<float> y = op::conv_transpose2d(c.x(0), w, b, g, full[0], full[1]);
  for (std::size_t i = 0; i < 2; ++i) {
    if (begin[i] != 0 || end[i] != 0) y = op::slice(y, 2 + static_cast<std::int64_t>(i), begin[i], full[i] - end[i]);
  }
  return {c.wrap(y, c.x(0), weights)};
}

}  // namespace magmadnn::onnx::detail
