/// @file nodes.h
/// Node classes of the elementwise and matrix families. User code builds them
/// with the op:: factories; graph passes (passes.h) inspect and rewrite them,
/// which is why they are declared here rather than hidden in a .cpp.
#pragma once

#include <string>
#include <vector>

#include "magmadnn/backend/kernels.h"
#include "magmadnn/backend/unary_op_table.h"
#include "magmadnn/compute/operation.h"

namespace magmadnn::op {

/// out = a (op) b with NumPy broadcasting; op is Add, Sub, Mul or Div.
template <typename T>
class BinaryNode : public Operation<T> {
 public:
  BinaryNode(BinaryOp op, OpPtr<T> a, OpPtr<T> b);
  std::string kind() const override;
  BinaryOp op() const noexcept { return op_; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;
  /// Add's inputs, and Sub's first, when not broadcast.
  bool gradient_is_grad_out(std::size_t i) const override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  BinaryOp op_;
};

/// y = f(x; p) elementwise (negative, exp, log, pow, scale, sigmoid, relu, tanh...).
template <typename T>
class UnaryNode : public Operation<T> {
 public:
  UnaryNode(UnaryOp op, T p, OpPtr<T> x);
  std::string kind() const override;
  UnaryOp op() const noexcept { return op_; }
  T param() const noexcept { return p_; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override { return in[0]; }
  void forward() override;

 private:
  UnaryOp op_;
  T p_;
};

/// A chain of elementwise unary functions applied in order, in one node (the
/// result of the elementwise fusion pass). On the host the forward pass walks
/// memory once: the chain runs block by block on cache-sized pieces and only
/// the final values are written out. Backward recomputes the intermediate
/// values of each block with the same kernels (so they are bit-identical to
/// the forward ones) instead of storing them, so it is exact and keeps no
/// per-step buffers. On a GPU each step is one kernel over the whole tensor.
template <typename T>
class UnaryChainNode : public Operation<T> {
 public:
  struct Step {
    UnaryOp op;
    T p;
  };
  UnaryChainNode(std::vector<Step> steps, OpPtr<T> x);
  std::string kind() const override { return "fused_elementwise"; }
  const std::vector<Step>& steps() const noexcept { return steps_; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override { return in[0]; }
  void forward() override;

 private:
  std::vector<Step> steps_;
};

/// out = op(a) * op(b) for 2-D a, b (op transposes when asked).
template <typename T>
class MatmulNode : public Operation<T> {
 public:
  MatmulNode(OpPtr<T> a, OpPtr<T> b, bool trans_a, bool trans_b);
  std::string kind() const override { return "matmul"; }
  bool trans_a() const noexcept { return ta_; }
  bool trans_b() const noexcept { return tb_; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  bool ta_, tb_;
  LowPrecisionCache grad_low_;  // the incoming gradient, cast once for both products of backward
};

/// Smallest weight matrix whose update a linear node folds into its
/// gradient's GEMM (backward_into). In the MLP benchmark, folding the 528x784
/// weight saved 0.03 ms a step (the update pass over 5 MB); folding the
/// 10x528 one cost 0.01 ms in its GEMM while its separate update takes
/// 0.001 ms.
inline constexpr std::int64_t kFoldUpdateMinWeights = std::int64_t{1} << 16;

/// out = act(x * w^T + b): x {batch, in}, w {out, in}, b {out} (optional),
/// computed in one pass (math::linear), with act one that supports() accepts;
/// the constructor throws NotSupportedError for any other.
template <typename T>
class LinearNode : public Operation<T> {
 public:
  /// Identity, or an activation without a parameter whose derivative
  /// follows from its output (op table: `activation`, no `param`,
  /// grad_from_output): the node keeps no pre-activation buffer, so its
  /// backward pass has only act(z), and it holds no parameter. Decided by the
  /// op table alone, so the fusion pass and the constructor agree.
  static bool supports(UnaryOp act) {
    const UnaryOpInfo& r = unary_op_info(act);
    return act == UnaryOp::Identity || (r.activation && r.param == nullptr && grad_from_output(act));
  }
  /// NotSupportedError naming `node` and the activations it could apply
  /// when supports(act) is false (also for FoldedLinearNode).
  static void check_supported(const char* node, UnaryOp act);
  /// "<base>" for Identity, else "<base>_<activation>".
  static std::string kind_of(const char* base, UnaryOp act) {
    return act == UnaryOp::Identity ? std::string(base) : std::string(base) + "_" + op_name(act);
  }

  LinearNode(OpPtr<T> x, OpPtr<T> w, OpPtr<T> b, UnaryOp act = UnaryOp::Identity);
  std::string kind() const override;
  UnaryOp activation() const noexcept { return act_; }
  bool has_bias() const noexcept { return this->inputs_.size() == 3; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;
  /// Folds an update of the weight into the GEMM that computes its gradient
  /// (beta = the update's beta, alpha scaling the product), after the input
  /// gradient has used the old weight. Float GEMMs only: under bf16 or fp16
  /// the update is left to the caller, whose pass writes the weight's
  /// low-precision copy with it (LowPrecisionCache::axpby).
  void backward_into(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin,
                     const std::vector<const typename Operation<T>::UpdateTarget*>& targets,
                     std::vector<bool>& applied) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  UnaryOp act_;
  LowPrecisionCache grad_low_;  // dz, cast once for both products of backward
};

/// Sum of n inputs, broadcast to one shape.
template <typename T>
class AddNNode : public Operation<T> {
 public:
  explicit AddNNode(std::vector<OpPtr<T>> xs);
  std::string kind() const override { return "add_n"; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;
  /// Every input not broadcast.
  bool gradient_is_grad_out(std::size_t i) const override {
    return this->in(i).shape() == this->output_.shape();
  }

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;
};

}  // namespace magmadnn::op
