/// @file conv.h
/// Convolution and pooling graph ops (paper §2.2), computed by the engine in
/// magmadnn/conv (algorithms chosen per shape by conv/chooser.h).
///
///  - conv2d(x, w [, b], params, algo): x {N, C, H, W}, w {K, C/groups, R, S},
///    b {K}; y {N, K, P, Q}. Cross-correlation, as in cuDNN and v1.
///    Gradients: dx (backward data), dw and db (backward filter).
///  - pooling(x, PoolParams): max or average pooling of x {N, C, H, W}; the
///    max positions of the last forward pass are kept for the backward pass.
/// v1 spellings: conv2dforward(input, filter, pad_h, pad_w, vertical_stride,
/// horizontal_stride, dilation_h, dilation_w) and pooling(input, filter_h,
/// filter_w, pad_h, pad_w, vertical_stride, horizontal_stride, mode).
/// Shape mismatches raise ShapeError naming the shapes and the geometry.
#pragma once

#include "magmadnn/compute/arithmetic.h"
#include "magmadnn/compute/blocked_output.h"
#include "magmadnn/conv/algorithm.h"
#include "magmadnn/conv/conv_params.h"

namespace magmadnn::op {

/// Reads x in any layout and may produce oneDNN's blocked one
/// (BlockedOutput, blocked_output.h) when its algorithm is the chooser's
/// or oneDNN.
template <typename T>
class Conv2dNode : public Operation<T>, public BlockedOutput<T> {
 public:
  /// Inputs x, w and optionally b (null: no bias). `relu`: the output is
  /// max(conv + b, 0), the ReLU fused into the convolution where the chosen
  /// algorithm can (op::fuse_conv_activation makes such nodes).
  Conv2dNode(OpPtr<T> x, OpPtr<T> w, OpPtr<T> b, const conv::ConvParams& params, conv::Algo algo,
             bool relu = false);
  std::string kind() const override { return relu_ ? "conv2d_relu" : "conv2d"; }
  const conv::ConvParams& params() const noexcept { return params_; }
  conv::Algo algorithm() const noexcept { return algo_; }
  bool fused_relu() const noexcept { return relu_; }
  /// Eval mode (set_training(false)): no backward pass follows the forward
  /// ones, so the algorithms keep no copy of x for one (conv2d_forward's
  /// keep_inputs). The values are the same in both modes.
  void set_training(bool training) override { training_ = training; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  // Whether this step's convolution may run on blocked operands.
  bool blocked_possible() const;

  conv::ConvParams params_;
  conv::Algo algo_;
  bool relu_;
  bool training_ = true;
  int x_block_ = 0;     // x's layout as the last forward pass convolved it
  Tensor<T> x_plain_;   // x in NCHW, when the producer's blocked x could not be used
};

/// Reads x in any layout where it is a global average (output NCHW) or a
/// max pooling the blocked kernel takes (conv/pool_blocked.h); a max
/// pooling of a blocked x produces that layout (BlockedOutput) when
/// keep_blocked_layouts allowed it, else reorders its output to NCHW.
template <typename T>
class PoolingNode : public Operation<T>, public BlockedOutput<T> {
 public:
  PoolingNode(OpPtr<T> x, const conv::PoolParams& params);
  std::string kind() const override { return params_.mode == conv::PoolMode::Max ? "max_pool" : "average_pool"; }
  const conv::PoolParams& params() const noexcept { return params_; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  conv::PoolParams params_;
  Tensor<std::int32_t> argmax_;
  int x_block_ = 0;  // the layout x came in at the last forward pass
  Tensor<T> g_blocked_;  // a plain gradient in x's layout (a blocked max pooling whose output went NCHW)
};

/// The transposed convolution (the adjoint of conv2d in x, ONNX's and
/// PyTorch's ConvTranspose): x {N, C, H, W}, w {C, K/groups, R, S} (the
/// filter of the convolution it transposes), b {K} or null; y {N, K,
/// out_h, out_w}, where conv2d of a {N, K, out_h, out_w} tensor with
/// `params` must give x's {H, W} (else ShapeError naming both). Computed by
/// the engine's backward-data pass; its gradients are conv2d of g (dx), the
/// backward-filter pass with g as the input and x as the output gradient
/// (dw), and the sums of g per channel (db).
template <typename T>
class ConvTranspose2dNode : public Operation<T> {
 public:
  ConvTranspose2dNode(OpPtr<T> x, OpPtr<T> w, OpPtr<T> b, const conv::ConvParams& params, std::int64_t out_h,
                      std::int64_t out_w);
  std::string kind() const override { return "conv_transpose2d"; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  conv::ConvParams params_;
  std::int64_t out_h_, out_w_;
};

/// y = conv_transpose2d(x, w) (+ b when given: a null-free Expr), output {out_h, out_w}.
template <OpLike X, OpLike W>
  requires SameOpType<X, W>
Expr<op_value_t<X>> conv_transpose2d(const X& x, const W& w, const Expr<op_value_t<X>>& b,
                                     const conv::ConvParams& params, std::int64_t out_h, std::int64_t out_w) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<ConvTranspose2dNode<T>>(to_node(x), to_node(w), b ? to_node(b) : nullptr, params,
                                                               out_h, out_w));
}

/// y = conv2d(x, w) without bias.
template <OpLike X, OpLike W>
  requires SameOpType<X, W>
Expr<op_value_t<X>> conv2d(const X& x, const W& w, const conv::ConvParams& params = {},
                           conv::Algo algo = conv::Algo::Auto) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<Conv2dNode<T>>(to_node(x), to_node(w), nullptr, params, algo));
}

/// y = conv2d(x, w) + b (b {K}, one per output channel).
template <OpLike X, OpLike W, OpLike B>
  requires SameOpType<X, W, B>
Expr<op_value_t<X>> conv2d(const X& x, const W& w, const B& b, const conv::ConvParams& params = {},
                           conv::Algo algo = conv::Algo::Auto) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<Conv2dNode<T>>(to_node(x), to_node(w), to_node(b), params, algo));
}

/// MagmaDNN v1 spelling. use_cross_correlation = false (true convolution) is
/// not supported and raises NotSupportedError; needs_grad is ignored.
template <OpLike X, OpLike W>
  requires SameOpType<X, W>
Expr<op_value_t<X>> conv2dforward(const X& x, const W& w, int pad_h = 0, int pad_w = 0, int vertical_stride = 1,
                                  int horizontal_stride = 1, int dilation_h = 1, int dilation_w = 1,
                                  bool use_cross_correlation = true, bool /*needs_grad*/ = true) {
  MAGMADNN_CHECK(use_cross_correlation, NotSupportedError,
                 "conv2dforward: only cross-correlation is supported (flip the filters for a true convolution)");
  conv::ConvParams p;
  p.pad_h = pad_h, p.pad_w = pad_w, p.stride_h = vertical_stride, p.stride_w = horizontal_stride;
  p.dilation_h = dilation_h, p.dilation_w = dilation_w;
  return conv2d(x, w, p);
}

/// y = pool(x).
template <OpLike X>
Expr<op_value_t<X>> pooling(const X& x, const conv::PoolParams& params) {
  using T = op_value_t<X>;
  return make_expr<T>(std::make_shared<PoolingNode<T>>(to_node(x), params));
}

/// MagmaDNN v1 spelling (propagate_nan and needs_grad are ignored).
template <OpLike X>
Expr<op_value_t<X>> pooling(const X& x, int filter_h, int filter_w, int pad_h = 0, int pad_w = 0,
                            int vertical_stride = 1, int horizontal_stride = 1, conv::PoolMode mode = MAX_POOL,
                            bool /*propagate_nan*/ = false, bool /*needs_grad*/ = true) {
  conv::PoolParams p;
  p.kernel_h = filter_h, p.kernel_w = filter_w, p.pad_h = pad_h, p.pad_w = pad_w;
  p.stride_h = vertical_stride, p.stride_w = horizontal_stride, p.mode = mode;
  return pooling(x, p);
}

}  // namespace magmadnn::op
