// The importer's builders for operators composed from magmadnn's ops
// (compose.h): the Reduce* family and LayerNormalization.
#include <algorithm>

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

}  // namespace magmadnn::onnx::detail
