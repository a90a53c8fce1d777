/// @file compose.h
/// Internal to magmadnn_onnx: ONNX operators that magmadnn has no single op
/// for, composed from its graph ops (so their forward and gradient are those
/// ops', on every backend). Templates on the element type: the importer
/// builds them in float, tests/onnx/test_onnx_compose.cpp gradchecks them in
/// double.
///
/// Requirements common to all: `x` has a shape known when the function is
/// called (x->get_output_shape()); `axes` are normalized (0 <= a < rank) and
/// distinct. `free_batch`: axis 0 of x is the free batch axis, so reshapes
/// leave it -1; reducing axis 0 then is refused (NotSupportedError), since
/// the reduced extent must be known when the graph is built.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "magmadnn/compute/compute.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::onnx::compose {

using Dims = std::vector<std::int64_t>;

/// ONNX's Reduce* operators.
enum class Reduce { Sum, Mean, Max, Min, L1, L2, SumSquare, LogSum, LogSumExp, Prod };

namespace detail {

inline Dims with_free_batch(Dims d, bool free_batch) {
  if (free_batch && !d.empty()) d[0] = -1;
  return d;
}

// Max (or min) of x along `axis`, the axis kept with size 1: x viewed as
// {outer, 1, n, inner} and max-pooled with an {n, 1} window (the pooling
// op's forward, and its backward to the arg max).
template <typename T>
op::Expr<T> extremum_axis(const op::Expr<T>& x, std::int64_t axis, bool max, bool free_batch) {
  const Dims d = x->get_output_shape().dims();
  MAGMADNN_CHECK(!(free_batch && axis == 0), NotSupportedError,
                 "a maximum or minimum over the free batch axis (its extent is unknown when the graph is built)");
  const std::int64_t outer = std::accumulate(d.begin(), d.begin() + axis, std::int64_t{1}, std::multiplies<>());
  const std::int64_t inner = std::accumulate(d.begin() + axis + 1, d.end(), std::int64_t{1}, std::multiplies<>());
  const std::int64_t n = d[static_cast<std::size_t>(axis)];
  conv::PoolParams p;
  p.kernel_h = p.stride_h = n;
  p.kernel_w = p.stride_w = 1;
  p.pad_h = p.pad_w = 0;
  p.mode = conv::PoolMode::Max;
  op::Expr<T> v = op::reshape(max ? x : op::negative(x), Dims{free_batch ? -1 : outer, 1, n, inner});
  v = op::pooling(v, p);
  Dims kept = d;
  kept[static_cast<std::size_t>(axis)] = 1;
  v = op::reshape(v, with_free_batch(kept, free_batch));
  return max ? v : op::negative(v);
}

template <typename T>
op::Expr<T> sum_axes(op::Expr<T> x, const Dims& axes, bool mean) {
  for (std::int64_t a : axes) x = mean ? op::mean(x, a, true) : op::reduce_sum(x, a, true);
  return x;
}

// The product of x along `axis`, the axis kept with size 1: halves of the
// axis multiplied until one slice is left (an odd last slice carried), so
// the gradient is the product rule's, right where elements are zero.
template <typename T>
op::Expr<T> prod_axis(op::Expr<T> x, std::int64_t axis, bool free_batch) {
  MAGMADNN_CHECK(!(free_batch && axis == 0), NotSupportedError,
                 "a product over the free batch axis (its extent is unknown when the graph is built)");
  std::int64_t n = x->get_output_shape()[axis];
  MAGMADNN_CHECK(n > 0, NotSupportedError, "a product over an empty axis");
  while (n > 1) {
    const std::int64_t h = n / 2;
    op::Expr<T> y = op::product(op::slice(x, axis, 0, h), op::slice(x, axis, h, 2 * h));
    if (n % 2) y = op::concat(std::vector<op::Expr<T>>{y, op::slice(x, axis, 2 * h, n)}, axis);
    x = y;
    n = h + n % 2;
  }
  return x;
}

template <typename T>
op::Expr<T> max_axes(op::Expr<T> x, const Dims& axes, bool max, bool free_batch) {
  for (std::int64_t a : axes) x = extremum_axis(x, a, max, free_batch);
  return x;
}

}  // namespace detail

/// ONNX's Reduce<kind> of x over `axes` (all axes when empty), keeping them
/// with size 1 when `keepdims`, else removing them. LogSumExp is computed
/// as m + log(sum(exp(x - m))) with m the maximum, which does not overflow;
/// Prod as products of slices (an empty axis refused).
template <typename T>
op::Expr<T> reduce(Reduce kind, const op::Expr<T>& x, Dims axes, bool keepdims, bool free_batch) {
  const Dims d = x->get_output_shape().dims();
  if (axes.empty()) {
    axes.resize(d.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  op::Expr<T> y;
  switch (kind) {
    case Reduce::Sum: y = detail::sum_axes(x, axes, false); break;
    case Reduce::Mean: y = detail::sum_axes(x, axes, true); break;
    case Reduce::Max: y = detail::max_axes(x, axes, true, free_batch); break;
    case Reduce::Min: y = detail::max_axes(x, axes, false, free_batch); break;
    case Reduce::L1: y = detail::sum_axes(op::unary(UnaryOp::Abs, x), axes, false); break;
    case Reduce::L2: y = op::unary(UnaryOp::Sqrt, detail::sum_axes(op::unary(UnaryOp::Square, x), axes, false)); break;
    case Reduce::SumSquare: y = detail::sum_axes(op::unary(UnaryOp::Square, x), axes, false); break;
    case Reduce::LogSum: y = op::log(detail::sum_axes(x, axes, false)); break;
    case Reduce::Prod:
      y = x;
      for (std::int64_t a : axes) y = detail::prod_axis(y, a, free_batch);
      break;
    case Reduce::LogSumExp: {
      const op::Expr<T> m = detail::max_axes(x, axes, true, free_batch);
      y = op::add(m, op::log(detail::sum_axes(op::exp(op::sub(x, m)), axes, false)));
      break;
    }
  }
  Dims out;
  for (std::size_t k = 0; k < d.size(); ++k) {
    const bool reduced = std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(k)) != axes.end();
    if (!reduced) out.push_back(d[k]);
    else if (keepdims) out.push_back(1);
  }
  const bool batch_kept = std::find(axes.begin(), axes.end(), 0) == axes.end();
  if (out.empty()) out = {1};  // magmadnn has no rank-0 tensor
  return op::reshape(y, detail::with_free_batch(out, free_batch && batch_kept));
}

/// ONNX's LayerNormalization: x normalized over its axes from `axis` on
/// (mean 0, variance 1, the biased variance plus eps), times scale plus
/// bias (both broadcast from the right; bias may be empty). Returns
/// {y, mean, inv_std_dev}, the last two of x's rank with size 1 on the
/// normalized axes.
template <typename T>
std::vector<op::Expr<T>> layer_norm(const op::Expr<T>& x, const op::Expr<T>& scale, const op::Expr<T>& bias,
                                    std::int64_t axis, double eps, bool free_batch) {
  const Dims d = x->get_output_shape().dims();
  MAGMADNN_CHECK(!(free_batch && axis == 0), NotSupportedError,
                 "a layer normalization over the free batch axis (its extent is unknown when the graph is built)");
  const std::int64_t outer = std::accumulate(d.begin(), d.begin() + axis, std::int64_t{1}, std::multiplies<>());
  const std::int64_t inner = std::accumulate(d.begin() + axis, d.end(), std::int64_t{1}, std::multiplies<>());
  const op::Expr<T> rows = op::reshape(x, Dims{free_batch ? -1 : outer, inner});
  const op::Expr<T> mu = op::mean(rows, 1, true);
  const op::Expr<T> centred = op::sub(rows, mu);
  const op::Expr<T> inv = op::pow(op::add_scalar(op::mean(op::unary(UnaryOp::Square, centred), 1, true), eps), -0.5);
  op::Expr<T> y = op::reshape(op::product(centred, inv), detail::with_free_batch(d, free_batch));
  y = op::product(y, scale);
  if (bias) y = op::add(y, bias);
  Dims stat = d;
  std::fill(stat.begin() + axis, stat.end(), 1);
  stat = detail::with_free_batch(stat, free_batch);
  return {y, op::reshape(mu, stat), op::reshape(inv, stat)};
}


/// ELU: x for x > 0, alpha (e^x - 1) otherwise, as relu(x) + alpha (e^-relu(-x) - 1).
template <typename T>
op::Expr<T> elu(const op::Expr<T>& x, double alpha) {
  const op::Expr<T> neg = op::negative(op::relu(op::negative(x)));  // min(x, 0)
  return op::add(op::relu(x), op::scalarproduct(alpha, op::add_scalar(op::exp(neg), -1.0)));
}
/// CELU: max(0, x) + min(0, alpha (e^(x / alpha) - 1)).
template <typename T>
op::Expr<T> celu(const op::Expr<T>& x, double alpha) {
  const op::Expr<T> neg = op::negative(op::relu(op::negative(x)));
  return op::add(op::relu(x), op::scalarproduct(alpha, op::add_scalar(op::exp(op::scalarproduct(1.0 / alpha, neg)), -1.0)));
}
/// min(max(x, lo), hi) for tensors lo and hi (either may be empty: no bound),
/// broadcast against x: lo + relu(x - lo), then hi - relu(hi - y).
template <typename T>
op::Expr<T> clip(op::Expr<T> x, const op::Expr<T>& lo, const op::Expr<T>& hi) {
  if (lo) x = op::add(lo, op::relu(op::sub(x, lo)));
  if (hi) x = op::sub(hi, op::relu(op::sub(hi, x)));
  return x;
}
/// HardSigmoid: max(0, min(1, alpha x + beta)).
template <typename T>
op::Expr<T> hard_sigmoid(const op::Expr<T>& x, double alpha, double beta) {
  const op::Expr<T> z = op::relu(op::add_scalar(op::scalarproduct(alpha, x), beta));
  return op::add_scalar(op::negative(op::relu(op::add_scalar(op::negative(z), 1.0))), 1.0);
}
/// Softsign: x / (1 + |x|).
template <typename T>
op::Expr<T> softsign(const op::Expr<T>& x) {
  return op::div(x, op::add_scalar(op::unary(UnaryOp::Abs, x), 1.0));
}
/// PRelu: x for x > 0, slope x otherwise (slope broadcast against x).
template <typename T>
op::Expr<T> prelu(const op::Expr<T>& x, const op::Expr<T>& slope) {
  return op::sub(op::relu(x), op::product(slope, op::relu(op::negative(x))));
}
/// sinh (cosh when `cosh`): (e^x -+ e^-x) / 2.
template <typename T>
op::Expr<T> sinh_cosh(const op::Expr<T>& x, bool cosh) {
  const op::Expr<T> a = op::exp(x), b = op::exp(op::negative(x));
  return op::scalarproduct(0.5, cosh ? op::add(a, b) : op::sub(a, b));
}
/// Trilu: x (at least 2-D) with the elements above (upper: below) the k-th
/// diagonal of its last two axes zeroed, as a product with a constant mask.
template <typename T>
op::Expr<T> trilu(const op::Expr<T>& x, std::int64_t k, bool upper) {
  const Dims d = x->get_output_shape().dims();
  MAGMADNN_CHECK(d.size() >= 2, ShapeError, "Trilu of a tensor of rank " << d.size() << " (at least 2)");
  const std::int64_t rows = d[d.size() - 2], cols = d.back();
  std::vector<T> mask(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) mask[static_cast<std::size_t>(i * cols + j)] = (upper ? j - i >= k : j - i <= k) ? T(1) : T(0);
  }
  const auto m = op::constant<T>("trilu_mask", Tensor<T>::from_vector(Shape{rows, cols}, mask));
  return op::product(x, m);
}

/// One-hot rows of class indices t {N, d...} (integers held exactly as T):
/// {N, classes, d...}, 1 where t is the class and 0 elsewhere (an index
/// outside 0 .. classes - 1 gives zeros), as relu(1 - |t - c|) against the
/// constant c = 0 .. classes - 1: exact for integers.
template <typename T>
op::Expr<T> one_hot(const op::Expr<T>& t, std::int64_t classes, bool free_batch) {
  Dims e = t->get_output_shape().dims();
  e.insert(e.begin() + 1, 1);
  Dims cs(e.size(), 1);
  cs[1] = classes;
  std::vector<T> c(static_cast<std::size_t>(classes));
  std::iota(c.begin(), c.end(), T(0));
  const auto cls = op::constant<T>("classes", Tensor<T>::from_vector(Shape(cs), c));
  const op::Expr<T> d = op::unary(UnaryOp::Abs, op::sub(op::reshape(t, detail::with_free_batch(e, free_batch)), cls));
  return op::relu(op::add_scalar(op::negative(d), 1.0));
}

/// ONNX's NegativeLogLikelihoodLoss of x {N, C, d...} (log-probabilities)
/// and class indices t {N, d...}: -x[n, t[n, d], d] * w[t[n, d]] (w {C}
/// optional: 1), 0 where t is `ignore`; reduction "none" (shape {N, d...}),
/// "sum" or "mean" (the sum over the sum of the weights that were not
/// ignored), the last two of shape {1}.
template <typename T>
op::Expr<T> nll_loss(const op::Expr<T>& x, const op::Expr<T>& t, const op::Expr<T>& w,
                     std::optional<std::int64_t> ignore, const std::string& reduction, bool free_batch) {
  const Shape xs = x->get_output_shape();
  MAGMADNN_CHECK(xs.ndim() >= 2, ShapeError, "a loss of scores of shape " << xs << " (needs {N, C, ...})");
  op::Expr<T> sel = one_hot(t, xs[1], free_batch);  // {N, C, d...}
  if (w) {
    Dims ws(static_cast<std::size_t>(xs.ndim()), 1);
    ws[1] = xs[1];
    sel = op::product(sel, op::reshape(w, ws));
  }
  op::Expr<T> loss = op::negative(op::reduce_sum(op::product(sel, x), 1));
  op::Expr<T> weight = op::reduce_sum(sel, 1);
  if (ignore) {  // kept: 1 - relu(1 - |t - ignore|), 0 where t is ignore
    const op::Expr<T> hit = op::relu(op::add_scalar(op::negative(op::unary(UnaryOp::Abs, op::add_scalar(t, -static_cast<double>(*ignore)))), 1.0));
    const op::Expr<T> kept = op::add_scalar(op::negative(hit), 1.0);
    loss = op::product(loss, kept);
    weight = op::product(weight, kept);
  }
  if (reduction == "none") return loss;
  if (reduction == "sum") return op::reduce_sum(loss);
  MAGMADNN_CHECK(reduction == "mean", ValueError, "reduction '" << reduction << "' (none, sum or mean)");
  return op::div(op::reduce_sum(loss), op::reduce_sum(weight));
}

/// log_softmax of x along `axis` (the last, else permuted there and back).
template <typename T>
op::Expr<T> log_softmax_axis(const op::Expr<T>& x, std::int64_t axis) {
  const std::int64_t rank = x->get_output_shape().ndim();
  if (axis == rank - 1) return op::log_softmax(x);
  std::vector<int> swap(static_cast<std::size_t>(rank));
  std::iota(swap.begin(), swap.end(), 0);
  std::swap(swap[static_cast<std::size_t>(axis)], swap.back());
  return op::permute(op::log_softmax(op::permute(x, swap)), swap);
}

/// DepthToSpace of x {N, C, H, W} with block b: {N, C / b^2, H b, W b};
/// `crd` the CRD order of the channels, else DCR (ONNX's default).
template <typename T>
op::Expr<T> depth_to_space(const op::Expr<T>& x, std::int64_t b, bool crd, bool free_batch) {
  const Dims d = x->get_output_shape().dims();
  MAGMADNN_CHECK(d.size() == 4 && d[1] % (b * b) == 0, ShapeError,
                 "DepthToSpace of shape " << x->get_output_shape() << " with block " << b);
  const std::int64_t n = free_batch ? -1 : d[0], c = d[1] / (b * b), h = d[2], w = d[3];
  const op::Expr<T> v = op::reshape(x, crd ? Dims{n, c, b, b, h, w} : Dims{n, b, b, c, h, w});
  const op::Expr<T> p = op::permute(v, crd ? std::vector<int>{0, 1, 4, 2, 5, 3} : std::vector<int>{0, 3, 4, 1, 5, 2});
  return op::reshape(p, Dims{n, c, h * b, w * b});
}
/// SpaceToDepth of x {N, C, H, W} with block b: {N, C b^2, H / b, W / b}.
template <typename T>
op::Expr<T> space_to_depth(const op::Expr<T>& x, std::int64_t b, bool free_batch) {
  const Dims d = x->get_output_shape().dims();
  MAGMADNN_CHECK(d.size() == 4 && d[2] % b == 0 && d[3] % b == 0, ShapeError,
                 "SpaceToDepth of shape " << x->get_output_shape() << " with block " << b);
  const std::int64_t n = free_batch ? -1 : d[0], c = d[1], h = d[2] / b, w = d[3] / b;
  const op::Expr<T> p = op::permute(op::reshape(x, Dims{n, c, h, b, w, b}), {0, 3, 5, 1, 2, 4});
  return op::reshape(p, Dims{n, c * b * b, h, w});
}
/// MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over `axes`
/// (ONNX's function body; var the biased variance).
template <typename T>
op::Expr<T> mean_variance_norm(const op::Expr<T>& x, const Dims& axes, bool free_batch) {
  const op::Expr<T> mu = reduce(Reduce::Mean, x, axes, true, free_batch);
  const op::Expr<T> centred = op::sub(x, mu);
  const op::Expr<T> var = reduce(Reduce::Mean, op::unary(UnaryOp::Square, centred), axes, true, free_batch);
  return op::div(centred, op::add_scalar(op::unary(UnaryOp::Sqrt, var), 1e-9));
}
/// LRN of x {N, C, ...}: x / (bias + alpha / size * s)^beta with s the sum
/// of x^2 over the `size` channels around each (size odd), an average
/// pooling over the channel axis that counts the zero padding.
template <typename T>
op::Expr<T> lrn(const op::Expr<T>& x, std::int64_t size, double alpha, double beta, double bias, bool free_batch) {
  const Dims d = x->get_output_shape().dims();
  MAGMADNN_CHECK(d.size() >= 3 && size % 2 == 1, NotSupportedError,
                 "LRN of shape " << x->get_output_shape() << " with size " << size << " (odd sizes, {N, C, ...})");
  const std::int64_t rest = std::accumulate(d.begin() + 2, d.end(), std::int64_t{1}, std::multiplies<>());
  conv::PoolParams p;
  p.kernel_h = size, p.kernel_w = 1;
  p.stride_h = p.stride_w = 1;
  p.pad_h = (size - 1) / 2, p.pad_w = 0;
  p.mode = conv::PoolMode::Average;
  p.count_include_pad = true;
  const op::Expr<T> sq = op::reshape(op::unary(UnaryOp::Square, x), Dims{free_batch ? -1 : d[0], 1, d[1], rest});
  const op::Expr<T> avg = op::reshape(op::pooling(sq, p), detail::with_free_batch(d, free_batch));  // s / size
  return op::product(x, op::pow(op::add_scalar(op::scalarproduct(alpha, avg), bias), -beta));
}

/// [z > 0] elementwise (1, else 0; 0 at z = 0): the arg max of (0, z)
/// stacked on a new last axis, the 0 made as relu(-|z|) so that it has z's
/// shape (and a free batch axis) and stays 0 for infinite z. Piecewise
/// constant: the gradient is zero.
template <typename T>
op::Expr<T> step(const op::Expr<T>& z, bool free_batch) {
  Dims d = z->get_output_shape().dims();
  d.push_back(1);
  const op::Expr<T> col = op::reshape(z, detail::with_free_batch(d, free_batch));
  const op::Expr<T> zero = op::relu(op::negative(op::unary(UnaryOp::Abs, col)));
  const auto last = static_cast<std::int64_t>(d.size()) - 1;
  return op::argmax(op::concat(std::vector<op::Expr<T>>{zero, col}, last), last);
}
/// Hardmax along `axis`: 1 at the first maximum, 0 elsewhere, as
/// relu(1 - |argmax - c|) against the constant c = 0 .. n - 1 on that axis.
template <typename T>
op::Expr<T> hardmax(const op::Expr<T>& x, std::int64_t axis) {
  const Dims d = x->get_output_shape().dims();
  const std::int64_t n = d[static_cast<std::size_t>(axis)];
  Dims cs(d.size(), 1);
  cs[static_cast<std::size_t>(axis)] = n;
  std::vector<T> c(static_cast<std::size_t>(n));
  std::iota(c.begin(), c.end(), T(0));
  const auto cls = op::constant<T>("positions", Tensor<T>::from_vector(Shape(cs), c));
  const op::Expr<T> dist = op::unary(UnaryOp::Abs, op::sub(op::argmax(x, axis, true), cls));
  return op::relu(op::add_scalar(op::negative(dist), 1.0));
}

/// GatherElements: y[.., j, ..] = x[.., t[.., j, ..], ..] along `axis`,
/// with integer indices t (as T; negative ones count from the end) of x's
/// shape but for that axis: the sum over x's axis of x times a one-hot of
/// t on a new axis, relu(1 - |t - c|) against c = 0 .. n - 1 (exact for
/// finite x; an infinite x off the index gives NaN, as 0 * inf).
template <typename T>
op::Expr<T> gather_elements(const op::Expr<T>& x, const op::Expr<T>& t, std::int64_t axis, bool free_batch) {
  const Dims xd = x->get_output_shape().dims(), td = t->get_output_shape().dims();
  const auto a = static_cast<std::size_t>(axis);
  MAGMADNN_CHECK(xd.size() == td.size(), ShapeError, "GatherElements: indices of rank " << td.size() << " for data of rank " << xd.size());
  for (std::size_t k = 0; k < xd.size(); ++k) {
    MAGMADNN_CHECK(k == a || xd[k] == td[k], NotSupportedError,
                   "GatherElements: indices " << t->get_output_shape() << " smaller than data " << x->get_output_shape()
                                              << " off the axis");
  }
  const std::int64_t n = xd[a];
  const op::Expr<T> wrapped = op::add(t, op::scalarproduct(static_cast<double>(n), step(op::negative(t), free_batch)));
  Dims te = td, xe = xd, cs(xd.size() + 1, 1);
  te.insert(te.begin() + static_cast<std::ptrdiff_t>(a) + 1, 1);  // {.., J, 1, ..}
  xe.insert(xe.begin() + static_cast<std::ptrdiff_t>(a), 1);      // {.., 1, n, ..}
  cs[a + 1] = n;
  std::vector<T> c(static_cast<std::size_t>(n));
  std::iota(c.begin(), c.end(), T(0));
  const auto cls = op::constant<T>("positions", Tensor<T>::from_vector(Shape(cs), c));
  const op::Expr<T> te_ = op::reshape(wrapped, detail::with_free_batch(te, free_batch));
  const op::Expr<T> hot = op::relu(op::add_scalar(op::negative(op::unary(UnaryOp::Abs, op::sub(te_, cls))), 1.0));
  const op::Expr<T> picked = op::product(hot, op::reshape(x, detail::with_free_batch(xe, free_batch)));
  return op::reduce_sum(picked, static_cast<std::int64_t>(a) + 1);
}

/// Gather of a table x {A.., n, B..} along `axis` at integer indices t
/// {I..} (as T; negative ones count from the end): {A.., I.., B..}, as a
/// product of a one-hot of t {I.., n} with x's axis moved first and
/// flattened to {n, rest} (exact for finite x; an infinite x off the
/// index gives NaN, as 0 * inf). `free_batch`: t's axis 0 is free.
template <typename T>
op::Expr<T> gather_rows(const op::Expr<T>& x, const op::Expr<T>& t, std::int64_t axis, bool free_batch) {
  const Dims xd = x->get_output_shape().dims(), td = t->get_output_shape().dims();
  const auto a = static_cast<std::size_t>(axis);
  const std::int64_t n = xd[a];
  const std::int64_t rest = std::accumulate(xd.begin(), xd.end(), std::int64_t{1}, std::multiplies<>()) / n;
  std::vector<int> front{static_cast<int>(a)};
  for (std::size_t k = 0; k < xd.size(); ++k) if (k != a) front.push_back(static_cast<int>(k));
  const op::Expr<T> table = op::reshape(axis == 0 ? x : op::permute(x, front), Dims{n, rest});
  const op::Expr<T> wrapped = op::add(t, op::scalarproduct(static_cast<double>(n), step(op::negative(t), free_batch)));
  const std::int64_t inner = std::accumulate(td.begin() + 1, td.end(), std::int64_t{1}, std::multiplies<>());
  const op::Expr<T> hot = one_hot(op::reshape(wrapped, detail::with_free_batch(Dims{td[0], inner}, free_batch)), n, free_batch);
  // hot: {I0, n, rest of I} -> {prod I, n}
  const op::Expr<T> rows = op::reshape(op::permute(hot, {0, 2, 1}), Dims{-1, n});
  Dims out = td;  // {I.., A.., B..}
  for (std::size_t k = 0; k < xd.size(); ++k) if (k != a) out.push_back(xd[k]);
  op::Expr<T> y = op::reshape(op::matmul(rows, table), detail::with_free_batch(out, free_batch && !td.empty()));
  if (a == 0) return y;
  std::vector<int> order;  // {A.., I.., B..}
  const auto r = static_cast<int>(td.size());
  for (int k = 0; k < static_cast<int>(a); ++k) order.push_back(r + k);
  for (int k = 0; k < r; ++k) order.push_back(k);
  for (int k = r + static_cast<int>(a); k < static_cast<int>(out.size()); ++k) order.push_back(k);
  return op::permute(y, order);
}

/// Where: x where cond is 1, y where it is 0 (cond of 0/1 values; all three
/// broadcast), as cond x + (1 - cond) y: exact for finite x and y (an
/// infinite value not selected gives NaN, as 0 * inf). The gradient is cond
/// for x and 1 - cond for y.
template <typename T>
op::Expr<T> where(const op::Expr<T>& cond, const op::Expr<T>& x, const op::Expr<T>& y) {
  return op::add(op::product(cond, x), op::product(op::add_scalar(op::negative(cond), 1.0), y));
}

/// CumSum of x along `axis`: y_i = sum of x_j for j <= i (j < i when
/// `exclusive`; j >= i, j > i when `reverse`), as a product with a constant
/// 0/1 matrix, the axis moved last and back (an infinite x gives NaN
/// beside it, as 0 * inf).
template <typename T>
op::Expr<T> cumsum(const op::Expr<T>& x, std::int64_t axis, bool exclusive, bool reverse, bool free_batch) {
  const Dims d = x->get_output_shape().dims();
  MAGMADNN_CHECK(!(free_batch && axis == 0), NotSupportedError,
                 "a CumSum along the free batch axis (its extent is unknown when the graph is built)");
  const auto a = static_cast<std::size_t>(axis);
  const std::int64_t n = d[a];
  std::vector<T> m(static_cast<std::size_t>(n * n));  // m[j, i]: x_j counts in y_i
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t i = 0; i < n; ++i) {
      const bool in = reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i);
      m[static_cast<std::size_t>(j * n + i)] = in ? T(1) : T(0);
    }
  }
  const auto mask = op::constant<T>("cumsum_mask", Tensor<T>::from_vector(Shape{n, n}, m));
  std::vector<int> order, inverse(d.size());  // x's axes with `axis` last
  for (std::size_t k = 0; k < d.size(); ++k) if (k != a) order.push_back(static_cast<int>(k));
  order.push_back(static_cast<int>(a));
  Dims moved;
  for (std::size_t k = 0; k < order.size(); ++k) {
    moved.push_back(d[static_cast<std::size_t>(order[k])]);
    inverse[static_cast<std::size_t>(order[k])] = static_cast<int>(k);
  }
  const bool last = a + 1 == d.size();
  const op::Expr<T> rows = op::reshape(last ? x : op::permute(x, order), Dims{-1, n});
  const op::Expr<T> y = op::reshape(op::matmul(rows, mask), detail::with_free_batch(moved, free_batch));
  return last ? y : op::permute(y, inverse);
}

/// CumSum of x along an axis read at run time: `axis` holds one integer
/// (as T; a negative one counts from the end), and the result is the sum
/// over x's axes k of [axis is k] cumsum(x, k), exact (products with 0 and
/// 1), its gradient cumsum's along that axis. Fixed shapes only.
template <typename T>
op::Expr<T> cumsum_any_axis(const op::Expr<T>& x, const op::Expr<T>& axis, bool exclusive, bool reverse) {
  const auto rank = static_cast<std::int64_t>(x->get_output_shape().ndim());
  const op::Expr<T> a = op::reshape(axis, Dims{1});
  const op::Expr<T> wrapped = op::add(a, op::scalarproduct(static_cast<double>(rank), step(op::negative(a), false)));
  op::Expr<T> y;
  for (std::int64_t k = 0; k < rank; ++k) {
    const op::Expr<T> hot = op::relu(op::add_scalar(op::negative(op::unary(UnaryOp::Abs, op::add_scalar(wrapped, -static_cast<double>(k)))), 1.0));
    const op::Expr<T> term = op::product(cumsum(x, k, exclusive, reverse, false), hot);
    y = k == 0 ? term : op::add(y, term);
  }
  return y;
}

/// q rounded to the nearest integer (ties to even) by adding and
/// subtracting 1.5 2^(p-1) in T's arithmetic (p its digits), for |q| <
/// 2^(p-2). Its gradient is the identity's (each op's), not rounding's.
template <typename T>
op::Expr<T> round_nearest(const op::Expr<T>& q) {
  const double c = 1.5 * std::ldexp(1.0, std::numeric_limits<T>::digits - 1);
  return op::add_scalar(op::add_scalar(q, c), -c);
}

/// v with a zero gradient (for finite |v| < 2^59): v - z, where z =
/// 2^60 round_nearest(2^-60 v) is 0 in value (the scaled v rounds to 0)
/// and has v's gradient (each op passes it on, the scales cancelling).
template <typename T>
op::Expr<T> stop_gradient(const op::Expr<T>& v) {
  const double s = std::ldexp(1.0, -60);
  return op::sub(v, op::scalarproduct(1.0 / s, round_nearest(op::scalarproduct(s, v))));
}

/// ONNX's Mod of a and b (broadcast, b != 0): a - b floor(a / b), with the
/// sign of b, or with `fmod` C's fmod, a - b trunc(a / b), with the sign
/// of a. floor(q) is r - [r > q], r = round_nearest(q); trunc adds
/// [q < 0][q > floor(q)]; both under stop_gradient, so the gradient is
/// Mod's: 1 for a, -floor (-trunc) for b. Where q = a / b rounds up to an
/// integer the quotient is one too large, and the remainder, then of the
/// wrong sign, is moved back by b. Exact for integers (held exactly as T)
/// while |a| < 2^(p-2) (2^22 in float); for other values within T's
/// rounding of a - b k.
template <typename T>
op::Expr<T> mod(const op::Expr<T>& a, const op::Expr<T>& b, bool fmod, bool free_batch) {
  const auto st = [&](const op::Expr<T>& z) { return step(z, free_batch); };
  const op::Expr<T> q = op::div(a, b), r = round_nearest(q);
  op::Expr<T> whole = op::sub(r, st(op::sub(r, q)));  // floor(q)
  if (fmod) whole = op::add(whole, op::product(st(op::negative(q)), st(op::sub(q, whole))));
  const op::Expr<T> m = op::sub(a, op::product(b, stop_gradient(whole)));
  if (!fmod) return op::add(m, op::product(b, st(op::negative(op::product(m, b)))));  // [m b < 0]: m + b
  const op::Expr<T> sign_q = op::sub(st(q), st(op::negative(q)));                      // [m a < 0]: m + b sign(q)
  return op::add(m, op::product(op::product(b, sign_q), st(op::negative(op::product(m, a)))));
}

/// GatherND of data x {B.., D.., R..} (`batch_dims` axes B, then the m
/// axes D that an index tuple names) at integer tuples t {B.., I.., m} (as
/// T; negative ones count from the end): {B.., I.., R..}, as gather_rows of
/// x flattened to {prod B prod D, R..} at each tuple's linear index plus
/// its batch's offset. Fixed shapes only (no free batch axis).
template <typename T>
op::Expr<T> gather_nd(const op::Expr<T>& x, const op::Expr<T>& t, std::int64_t batch_dims) {
  const Dims xd = x->get_output_shape().dims(), td = t->get_output_shape().dims();
  const auto b = static_cast<std::size_t>(batch_dims);
  const std::int64_t m = td.empty() ? 0 : td.back();
  MAGMADNN_CHECK(td.size() > b && m >= 1 && b + static_cast<std::size_t>(m) <= xd.size(), ShapeError,
                 "GatherND: indices " << t->get_output_shape() << " for data " << x->get_output_shape() << " with "
                                      << batch_dims << " batch axes");
  for (std::size_t k = 0; k < b; ++k) {
    MAGMADNN_CHECK(xd[k] == td[k], ShapeError, "GatherND: batch axis " << k << " of the indices "
                                                   << t->get_output_shape() << " differs from the data's " << x->get_output_shape());
  }
  const auto mu = static_cast<std::size_t>(m);
  std::vector<T> ext(mu), stride(mu);
  std::int64_t block = 1;  // elements of D
  for (std::size_t k = mu; k-- > 0;) {
    ext[k] = static_cast<T>(xd[b + k]);
    stride[k] = static_cast<T>(block);
    block *= xd[b + k];
  }
  Dims ms(td.size(), 1);
  ms.back() = m;
  const auto extents = op::constant<T>("gather_extents", Tensor<T>::from_vector(Shape(ms), ext));
  const auto strides = op::constant<T>("gather_strides", Tensor<T>::from_vector(Shape(ms), stride));
  const op::Expr<T> wrapped = op::add(t, op::product(extents, step(op::negative(t), false)));
  Dims ld(td.begin(), td.end() - 1);  // {B.., I..}
  if (ld.empty()) ld = {1};
  op::Expr<T> lin = op::reshape(op::reduce_sum(op::product(wrapped, strides), static_cast<std::int64_t>(td.size()) - 1, true), ld);
  const std::int64_t nb = std::accumulate(xd.begin(), xd.begin() + static_cast<std::ptrdiff_t>(b), std::int64_t{1},
                                          std::multiplies<>());  // batches
  if (b > 0) {  // + the batch's offset, (flat batch index) * block
    Dims os(xd.begin(), xd.begin() + static_cast<std::ptrdiff_t>(b));
    os.resize(ld.size(), 1);
    std::vector<T> off(static_cast<std::size_t>(nb));
    for (std::int64_t k = 0; k < nb; ++k) off[static_cast<std::size_t>(k)] = static_cast<T>(k * block);
    lin = op::add(lin, op::constant<T>("gather_batch_offsets", Tensor<T>::from_vector(Shape(os), off)));
  }
  Dims table{nb * block};
  table.insert(table.end(), xd.begin() + static_cast<std::ptrdiff_t>(b + mu), xd.end());
  Dims out(td.begin(), td.end() - 1);
  out.insert(out.end(), xd.begin() + static_cast<std::ptrdiff_t>(b + mu), xd.end());
  if (out.empty()) out = {1};
  return op::reshape(gather_rows(op::reshape(x, table), lin, 0, false), out);
}

}  // namespace magmadnn::onnx::compose
