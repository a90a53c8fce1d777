/// @file math.h
/// Arithmetic on tensors: free functions that check shapes and devices, then
/// dispatch to the backend where the operands live (tensor/dispatch.h).
///
/// Conventions for every function here:
///  - T is float or double;
///  - all operands must live on the same side (host, or the same GPU), else
///    DeviceError naming both;
///  - shapes are checked first: a mismatch throws ShapeError naming every
///    shape involved and the function's name;
///  - the `out` forms write into an existing tensor of the documented shape
///    (no allocation, so training loops can reuse buffers); the returning forms
///    allocate the result in the first operand's memory type;
///  - axes may be negative.
#pragma once

#include <cstdint>
#include <vector>

#include "magmadnn/backend/kernels.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::math {

/// Broadcast description of a (op) b into `out_shape` (NumPy rules). Throws
/// ShapeError if a or b does not broadcast to out_shape.
BroadcastDesc make_broadcast(const Shape& a, const Shape& b, const Shape& out_shape);

// -- elementwise, with broadcasting ----------------------------------------------
/// out = a (op) b; out must have broadcast_shapes(a, b).
template <typename T>
void binary(BinaryOp op, const Tensor<T>& a, const Tensor<T>& b, Tensor<T>& out);
template <typename T>
Tensor<T> binary(BinaryOp op, const Tensor<T>& a, const Tensor<T>& b);

template <typename T> void add(const Tensor<T>& a, const Tensor<T>& b, Tensor<T>& out) { binary(BinaryOp::Add, a, b, out); }
template <typename T> void sub(const Tensor<T>& a, const Tensor<T>& b, Tensor<T>& out) { binary(BinaryOp::Sub, a, b, out); }
/// Hadamard (elementwise) product.
template <typename T> void product(const Tensor<T>& a, const Tensor<T>& b, Tensor<T>& out) { binary(BinaryOp::Mul, a, b, out); }
template <typename T> void div(const Tensor<T>& a, const Tensor<T>& b, Tensor<T>& out) { binary(BinaryOp::Div, a, b, out); }
template <typename T> Tensor<T> add(const Tensor<T>& a, const Tensor<T>& b) { return binary(BinaryOp::Add, a, b); }
template <typename T> Tensor<T> sub(const Tensor<T>& a, const Tensor<T>& b) { return binary(BinaryOp::Sub, a, b); }
template <typename T> Tensor<T> product(const Tensor<T>& a, const Tensor<T>& b) { return binary(BinaryOp::Mul, a, b); }
template <typename T> Tensor<T> div(const Tensor<T>& a, const Tensor<T>& b) { return binary(BinaryOp::Div, a, b); }

/// y = f(x; p); y has x's shape and may be x itself.
template <typename T>
void unary(UnaryOp op, const Tensor<T>& x, Tensor<T>& y, T p = T(0));
template <typename T>
Tensor<T> unary(UnaryOp op, const Tensor<T>& x, T p = T(0));
/// dx = dy * f'(x; p), given x and y = f(x; p); all four have one shape.
template <typename T>
void unary_backward(UnaryOp op, const Tensor<T>& x, const Tensor<T>& y, const Tensor<T>& dy, Tensor<T>& dx,
                    T p = T(0));

/// The activation and bias gradients of a linear layer in one pass: for 2-D
/// y = f(z; p) and dy of one shape {rows, cols}, dx = dy * f'(z; p) and
/// db = the column sums of dx (db has cols elements, any shape). f must
/// have a derivative that follows from its output (grad_from_output).
template <typename T>
void unary_backward_colsum(UnaryOp op, const Tensor<T>& y, const Tensor<T>& dy, Tensor<T>& dx, Tensor<T>& db,
                           T p = T(0));
/// The same for a layer whose GEMMs read dx in L = bfloat16 or half (mixed
/// precision): dx is written rounded to L (the bits dx.cast<L>() of the
/// float result gives), db (when not null) is the float column sum of the
/// unrounded values, bit for bit unary_backward_colsum's. One pass where the
/// backend has the fused kernel (Kernels::unary_backward_colsum_bf16: the
/// CPU, bfloat16), else the float pass into a temporary and a conversion.
template <typename T, typename L>
void unary_backward_low(UnaryOp op, const Tensor<T>& y, const Tensor<T>& dy, Tensor<L>& dx, Tensor<T>* db,
                        T p = T(0));

template <typename T> Tensor<T> exp(const Tensor<T>& x) { return unary(UnaryOp::Exp, x); }
template <typename T> Tensor<T> log(const Tensor<T>& x) { return unary(UnaryOp::Log, x); }
template <typename T> Tensor<T> sigmoid(const Tensor<T>& x) { return unary(UnaryOp::Sigmoid, x); }
template <typename T> Tensor<T> relu(const Tensor<T>& x) { return unary(UnaryOp::Relu, x); }
template <typename T> Tensor<T> tanh(const Tensor<T>& x) { return unary(UnaryOp::Tanh, x); }
template <typename T> Tensor<T> pow(const Tensor<T>& x, T exponent) { return unary(UnaryOp::Pow, x, exponent); }
template <typename T> Tensor<T> scale(const Tensor<T>& x, T alpha) { return unary(UnaryOp::Scale, x, alpha); }
template <typename T> Tensor<T> add_scalar(const Tensor<T>& x, T c) { return unary(UnaryOp::AddScalar, x, c); }

/// x[i] = value.
template <typename T>
void fill(Tensor<T>& x, T value);
/// y += alpha * x (same number of elements).
template <typename T>
void axpy(T alpha, const Tensor<T>& x, Tensor<T>& y);
/// y = alpha * x + beta * y in one pass (same number of elements).
template <typename T>
void axpby(T alpha, const Tensor<T>& x, T beta, Tensor<T>& y);
/// axpby that also writes y's new values rounded to L = bfloat16 or half
/// (nearest even, exactly what y.cast<L>() would give) into y16, which has
/// y's size and memory: one pass where the backend has the fused kernel
/// (Kernels::axpby_bf16: bfloat16 on the CPU), else axpby then a conversion
/// (Backend::convert; this is the GPU's path for both types).
template <typename T, typename L>
void axpby(T alpha, const Tensor<T>& x, T beta, Tensor<T>& y, Tensor<L>& y16);

// -- matrix products ------------------------------------------------------------------
/// out = alpha * op(a) * op(b) + beta * out for 2-D a, b, out, where op
/// transposes when asked. out must be {rows of op(a), cols of op(b)}.
template <typename T>
void matmul(T alpha, const Tensor<T>& a, bool trans_a, const Tensor<T>& b, bool trans_b, T beta, Tensor<T>& out);
template <typename T>
Tensor<T> matmul(const Tensor<T>& a, const Tensor<T>& b, bool trans_a = false, bool trans_b = false);
/// out = a * ShiftLeft(b): b {k, n + 1} read in place without its first
/// column (row stride n + 1, no copy), a {m, k}, out {m, n}. The folded
/// dense layer's input gradient, dz [b | W] less the bias column.
template <typename T>
void matmul_drop_first_col(const Tensor<T>& a, const Tensor<T>& b, Tensor<T>& out);
/// Fully connected layer in one pass: out = act(x * w^T + bias) with x
/// {batch, in}, w {out, in}, bias {out} (or null), out {batch, out}. act is
/// Identity or an activation (op table, unary_op_table.h) with parameter p;
/// any other op throws ValueError.
template <typename T>
void linear(const Tensor<T>& x, const Tensor<T>& w, const Tensor<T>* bias, UnaryOp act, T p, Tensor<T>& out);

/// Mixed precision (autocast's GEMMs): as matmul and linear with operands
/// L = bfloat16 or half (the run's low precision), float accumulation and a
/// float result (and float bias). On a backend without GEMMs for L
/// (Kernels::gemm_mixed: the CPU has bf16 only) they throw
/// NotSupportedError.
template <typename L>
void matmul_mixed(float alpha, const Tensor<L>& a, bool trans_a, const Tensor<L>& b, bool trans_b, float beta,
                  Tensor<float>& out);
template <typename L>
Tensor<float> matmul_mixed(const Tensor<L>& a, const Tensor<L>& b, bool trans_a = false, bool trans_b = false);
template <typename L>
void linear_mixed(const Tensor<L>& x, const Tensor<L>& w, const Tensor<float>* bias, UnaryOp act, float p,
                  Tensor<float>& out);
/// A weight-gradient product applied as it is made (plain SGD in mixed
/// precision): w = beta * w + alpha * op(a) op(b) with operands in L, float
/// accumulation, and, when w16 is not null, w's new values rounded to L into
/// w16 (the bits w.cast<L>() would give). The product is made and consumed
/// in row tiles that stay in cache (Kernels::gemm_update_bf16), never stored
/// whole; each element's update is math::axpby's expression. Returns false,
/// having written nothing, where the backend has no such kernel (the CPU has
/// it for bfloat16); the caller then makes the product and calls axpby.
template <typename L>
bool gemm_update(float alpha, const Tensor<L>& a, bool trans_a, const Tensor<L>& b, bool trans_b, float beta,
                 Tensor<float>& w, Tensor<L>* w16);

// -- reductions --------------------------------------------------------------------------
/// Reduces `axis`: out has x's shape with that axis removed (keepdims: size 1).
template <typename T>
void reduce(ReduceOp op, const Tensor<T>& x, std::int64_t axis, Tensor<T>& out);
template <typename T>
Tensor<T> reduce(ReduceOp op, const Tensor<T>& x, std::int64_t axis, bool keepdims = false);
template <typename T> Tensor<T> sum(const Tensor<T>& x, std::int64_t axis, bool keepdims = false) { return reduce(ReduceOp::Sum, x, axis, keepdims); }
template <typename T> Tensor<T> mean(const Tensor<T>& x, std::int64_t axis, bool keepdims = false) { return reduce(ReduceOp::Mean, x, axis, keepdims); }
template <typename T> Tensor<T> max(const Tensor<T>& x, std::int64_t axis, bool keepdims = false) { return reduce(ReduceOp::Max, x, axis, keepdims); }
/// Sum of all elements, returned to the host.
template <typename T>
T sum_all(const Tensor<T>& x);
/// Index of the maximum along `axis` (first on ties); shape of x without axis.
template <typename T>
Tensor<std::int64_t> argmax(const Tensor<T>& x, std::int64_t axis);
/// Sums a broadcast result g back to `out`'s shape (the gradient of
/// broadcasting): out's shape must broadcast to g's shape.
template <typename T>
void reduce_to_shape(const Tensor<T>& g, Tensor<T>& out);

// -- softmax ---------------------------------------------------------------------------
/// Softmax (or log-softmax) over the last axis; y has x's shape.
template <typename T>
void softmax(const Tensor<T>& x, Tensor<T>& y, bool log = false);
template <typename T>
void softmax_backward(const Tensor<T>& y, const Tensor<T>& dy, Tensor<T>& dx, bool log = false);
/// Softmax cross-entropy's forward, fused where the backend has the kernel:
/// for 2-D logits z and targets y of one shape, writes logp =
/// log_softmax(z) and sets total = sum of y * logp. Returns false, having
/// done nothing, where the backend has no fused kernel (the caller composes
/// softmax, product and sum instead).
template <typename T>
bool softmax_xent(const Tensor<T>& z, const Tensor<T>& y, Tensor<T>& logp, double& total);
/// dz = s * (softmax(z) * row sums of y - y), from logp as softmax_xent
/// wrote it; false where the backend has no fused kernel.
template <typename T>
bool softmax_xent_backward(const Tensor<T>& logp, const Tensor<T>& y, Tensor<T>& dz, T s);

// -- batch normalisation -------------------------------------------------------------------
/// Batch normalisation of x {N, C, ...} per channel, with an optional residual
/// input and a ReLU after it (a residual block's tail, in one kernel where the
/// backend has it):
///   y = f((x - mean) * invstd * gamma + beta + skip),  f = ReLU or identity.
/// Training (running_mean null): mean and the biased var are the batch's,
/// over N and the axes after C (needs at least one value per channel);
/// inference: running_mean and running_var (C elements each) are used and
/// copied out. gamma and beta have C elements. Writes y (x's shape; skip, when
/// given, has it too) and mean, var, invstd = 1 / sqrt(var + eps) (C elements
/// each, any shape), the values batchnorm_backward reads. Where the backend
/// has no fused kernel (Kernels::batchnorm_forward) the result is composed
/// from the functions above (batchnorm_forward_composed).
template <typename T>
void batchnorm_forward(const Tensor<T>& x, const Tensor<T>& gamma, const Tensor<T>& beta, const Tensor<T>* skip,
                       bool relu, T eps, const Tensor<T>* running_mean, const Tensor<T>* running_var, Tensor<T>& y,
                       Tensor<T>& mean, Tensor<T>& var, Tensor<T>& invstd);
/// The gradients of batchnorm_forward, given g = dL/dy, the forward's x, its
/// output y (read for the ReLU's mask; null when it had no ReLU) and the
/// mean and invstd it wrote. `training`: they were the batch's, so dx has
/// their terms. Writes dgamma, dbeta (C elements each) and, where not null,
/// dx and dskip (x's shape; dskip is the gradient after the ReLU).
template <typename T>
void batchnorm_backward(const Tensor<T>& x, const Tensor<T>* y, const Tensor<T>& g, const Tensor<T>& gamma,
                        const Tensor<T>& mean, const Tensor<T>& invstd, bool training, Tensor<T>* dx,
                        Tensor<T>* dskip, Tensor<T>& dgamma, Tensor<T>& dbeta);
/// The same two, composed from elementwise ops and reductions on any
/// backend: what a backend without the fused kernels computes, and the
/// reference the fused ones are tested against.
template <typename T>
void batchnorm_forward_composed(const Tensor<T>& x, const Tensor<T>& gamma, const Tensor<T>& beta,
                                const Tensor<T>* skip, bool relu, T eps, const Tensor<T>* running_mean,
                                const Tensor<T>* running_var, Tensor<T>& y, Tensor<T>& mean, Tensor<T>& var,
                                Tensor<T>& invstd);
template <typename T>
void batchnorm_backward_composed(const Tensor<T>& x, const Tensor<T>* y, const Tensor<T>& g, const Tensor<T>& gamma,
                                 const Tensor<T>& mean, const Tensor<T>& invstd, bool training, Tensor<T>* dx,
                                 Tensor<T>* dskip, Tensor<T>& dgamma, Tensor<T>& dbeta);

// -- layout ------------------------------------------------------------------------------
/// y's axis i is x's axis perm[i]; y must have the permuted shape.
template <typename T>
void permute(const Tensor<T>& x, const std::vector<int>& perm, Tensor<T>& y);
/// Swaps the last two axes (a 2-D transpose, batched over leading axes).
template <typename T>
Tensor<T> transpose(const Tensor<T>& x);
/// SHM-Learn-Dist §4.2's ShiftRight: y {rows, cols + 1} = [lead | x] for a
/// 2-D x {rows, cols} (a column of `lead` before x's columns); the folded
/// dense layer's [1, x]. ShapeError naming both shapes when y does not fit.
template <typename T>
void shift_right(const Tensor<T>& x, T lead, Tensor<T>& y);
/// §4.3's ShiftLeft: y {rows, cols} = x {rows, cols + 1} without its first
/// column (the gradient of shift_right; also W out of the folded [b | W]).
template <typename T>
void shift_left(const Tensor<T>& x, Tensor<T>& y);

}  // namespace magmadnn::math
