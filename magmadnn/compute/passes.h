/// @file passes.h
/// Graph passes: rewrites of a built graph into an equivalent one that does
/// less work. Run them once, after building the graph and before the
/// training or inference loop:
///
///   auto out  = op::sigmoid(op::add(op::matmul(X, W, false, true), b));
///   auto fast = op::optimize(out);          // one linear_sigmoid node
///   op::InferencePlan<float> plan(fast);    // buffer reuse (inference_plan.h)
///
/// What every pass guarantees:
///  - same values: the returned root computes the same function of the
///    leaves (variables, constants, placeholders), up to floating-point
///    rounding of the fused kernels (a fused gemm + bias + activation may
///    round differently from three separate ops, at the level of the last
///    bits);
///  - same gradients: op::gradients of any loss built on the returned root
///    w.r.t. any leaf equals that of the unfused graph (same rounding caveat).
///    Gradients w.r.t. interior nodes that a pass removed are not available
///    (they are no longer in the graph; such a node gets a zero gradient);
///  - a node is fused away only if every one of its uses inside the graph is
///    the one being fused: an intermediate with a second consumer stays, and
///    so does everything that computes it;
///  - leaves are never changed or copied. Consumers of a replaced node inside
///    the graph are rewired to its replacement; removed nodes are not
///    destroyed while other handles hold them and still compute the same
///    values (one may now read a fused equivalent of its old input), but they
///    are no longer shared with the returned graph;
///  - the passes only read shapes that are already known (a bias or weight
///    whose shape is unknown, e.g. an unset placeholder, is left unfused).
/// Requirements: the graph is not being evaluated concurrently.
#pragma once

#include "magmadnn/compute/expr.h"

namespace magmadnn::op {

/// Fuses the fully connected pattern into one LinearNode (math::linear: one
/// gemm with bias and activation applied in a single pass over the output):
///   act(add(matmul(X, W, false, true), b))       -> linear_act(X, W, b)
///   act(add(matmul(X, transpose(W)), b))         -> linear_act(X, W, b)
///   act(matmul(X, W^T)),  act(linear(X, W, b))   -> linear_act(X, W[, b])
///   add(matmul(X, W^T), b)  (no activation)      -> linear(X, W, b)
///   act(folded_linear(X, Wb))                    -> folded_linear_act(X, Wb)
/// with act one that LinearNode<T>::supports() (decided by the op table: a
/// parameterless activation whose derivative follows from its output, such
/// as sigmoid, relu, tanh), b of shape {out} or {1, out} where W is
/// {out, in}, and either operand order of the add. Returns the new root (the
/// same node when nothing at the top was replaced).
template <typename T>
Expr<T> fuse_linear_activation(const Expr<T>& root);

/// Replaces every chain of two or more elementwise unary ops (exp, log,
/// sigmoid, relu, tanh, scale, pow, ...) in which each op but the last has
/// the next as its only consumer by one UnaryChainNode, which makes one pass
/// over memory (see nodes.h). Returns the new root.
template <typename T>
Expr<T> fuse_elementwise_chains(const Expr<T>& root);

/// Fuses relu(conv2d(x, w [, b])) into one Conv2dNode with a fused ReLU
/// (conv + bias + ReLU in one primitive where the chosen convolution
/// algorithm can, oneDNN's on the CPU; otherwise a ReLU pass over the
/// convolution's own output, which still saves the separate node's buffer).
/// Its backward masks the gradient by the output's sign, then runs the
/// convolution's passes. Returns the new root.
template <typename T>
Expr<T> fuse_conv_activation(const Expr<T>& root);

/// Moves a ReLU past the max pooling that reads it:
///   max_pool(relu(x))  ->  relu(max_pool(x))
/// when the ReLU has no other consumer. ReLU is monotone, so the two are the
/// same function, and their gradients are equal too: where a window's
/// maximum is positive both pick the same element, and where it is not both
/// pass zero. The rewritten form runs the ReLU, and its backward mask, on
/// the pooled tensor (a quarter of the size for 2x2 windows) instead of the
/// convolution's output. Run before fuse_conv_activation, which would
/// otherwise take the ReLU into the convolution. A ReLU of a batch
/// normalisation that fuse_batchnorm_activation can fuse (plain, read only
/// by the ReLU) stays: fused, it costs nothing, and the pooling then reads
/// the normalisation's (possibly blocked) output. Returns the new root.
template <typename T>
Expr<T> relu_after_max_pool(const Expr<T>& root);

/// Fuses a batch normalisation with the residual add and ReLU that follow
/// it in a residual block (math::batchnorm_forward: one kernel each way):
///   relu(batchnorm(x))            -> batchnorm_relu(x)
///   add(batchnorm(x), s)          -> batchnorm_add(x, s)       (either order)
///   relu(add(batchnorm(x), s))    -> batchnorm_add_relu(x, s)
/// when every absorbed node has no other consumer and s has x's shape (no
/// broadcast). The fused node shares the batch normalisation's running
/// statistics (BatchNormNode::fused), so layers holding them see its
/// updates. Returns the new root.
template <typename T>
Expr<T> fuse_batchnorm_activation(const Expr<T>& root);

/// Lets convolutions and batch normalisations keep oneDNN's channel-blocked
/// layout between them (blocked_output.h, conv/layout.h): a node may
/// produce it exactly when it is not the root and every one of its
/// consumers in the graph is a convolution reading it as x, a batch
/// normalisation reading it as x or residual input, a global average
/// pooling (float; conv/pool_blocked.h), whose output is NCHW in any
/// layout, or a max pooling the blocked kernel takes (float;
/// conv/pool_blocked.h), whose output may keep the layout in turn. Nodes
/// that read it
/// convert where their computation needs NCHW, so the values and gradients
/// are those of the NCHW graph up to the rounding of oneDNN's kernels and of
/// the blocked batch normalisation's sums. Rewires nothing; returns root.
/// Re-run it after changing the graph below a node it allowed (a new
/// consumer of an allowed node would read the blocked layout).
template <typename T>
Expr<T> keep_blocked_layouts(const Expr<T>& root);

struct OptimizeOptions {
  bool fuse_linear_activation = true;
  bool relu_after_max_pool = true;
  bool fuse_conv_activation = true;
  bool fuse_batchnorm_activation = true;
  bool fuse_elementwise_chains = true;
  bool keep_blocked_layouts = true;
};

/// Applies the enabled passes (linear fusion first, so that an activation is
/// absorbed by its gemm rather than by an elementwise chain; a ReLU before a
/// max pooling moves past it before conv fusion looks for ReLUs; the blocked
/// layouts last, on the fused graph). Buffer reuse is
/// not a rewrite: it is done by op::InferencePlan at evaluation time.
template <typename T>
Expr<T> optimize(const Expr<T>& root, const OptimizeOptions& options = {});

}  // namespace magmadnn::op
