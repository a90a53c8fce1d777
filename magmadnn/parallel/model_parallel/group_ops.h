/// @file group_ops.h
/// The graph ops that move activations and gradients between the ranks of a
/// model-parallel group (Megatron-LM's conjugate operators). Each is the
/// adjoint of another, so a layer's forward and backward pass each hold
/// exactly the collective it needs:
///
///   op                   forward                        backward
///   copy_to_group(x)     identity                       allreduce (sum) of dx
///   reduce_from_group(x) allreduce (sum) of x           identity
///   gather_columns(x)    allgather of column shards     this rank's columns of dy
///   scatter_columns(x)   this rank's columns of x       allgather of dx's shards
///   gather_channels(x)   allgather of channel shards    this rank's channels of dy
///   scatter_channels(x)  this rank's channels of x      allgather of dx's shards
///
/// Columns and channels are split by shard_of (shard.h). The channel ops are
/// the column ops on axis 1 of an NCHW tensor, whose index is a block of
/// H * W elements instead of one (group_tensor.h): one implementation,
/// SplitAxis choosing the number of axes checked and the name. The group
/// is every rank of the communicator, held by shared ownership so the graph
/// keeps it alive.
///
/// Requires: every rank of the group builds the same graph and evaluates and
/// differentiates it in the same order (each forward and backward pass is a
/// collective call); 2-D inputs for the column ops, 4-D {N, C, H, W} for the
/// channel ops. Guarantees: with one rank each op is the identity both ways
/// and communicates nothing; the communicator's watchdog bounds every wait,
/// so a rank that stops evaluating raises CommError on the others instead of
/// hanging.
#pragma once

#include <memory>

#include "magmadnn/compute/expr.h"
#include "magmadnn/comm/communicator.h"
#include "magmadnn/core/shard.h"

namespace magmadnn::distributed::mp {

using GroupPtr = std::shared_ptr<Communicator>;

/// The state every group op shares: its group.
template <typename T>
class GroupNode : public op::Operation<T> {
 public:
  Communicator& group() const noexcept { return *group_; }

 protected:
  GroupNode(std::string name, op::OpPtr<T> x, GroupPtr group);
  GroupPtr group_;
};

template <typename T>
class CopyToGroupNode : public GroupNode<T> {
 public:
  CopyToGroupNode(op::OpPtr<T> x, GroupPtr group) : GroupNode<T>("copy_to_group", std::move(x), std::move(group)) {}
  std::string kind() const override { return "copy_to_group"; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override { return in[0]; }
  void forward() override;
};

template <typename T>
class ReduceFromGroupNode : public GroupNode<T> {
 public:
  ReduceFromGroupNode(op::OpPtr<T> x, GroupPtr group)
      : GroupNode<T>("reduce_from_group", std::move(x), std::move(group)) {}
  std::string kind() const override { return "reduce_from_group"; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override { return in[0]; }
  void forward() override;
};

/// What the split axis 1 of a gather or scatter is: a matrix's columns
/// ({rows, cols}) or an NCHW tensor's channels ({N, C, H, W}).
enum class SplitAxis { columns, channels };

/// {rows, this rank's shard of n, inner...} -> {rows, n, inner...}.
template <typename T>
class GatherSplitNode : public GroupNode<T> {
 public:
  GatherSplitNode(op::OpPtr<T> x, GroupPtr group, std::int64_t n, SplitAxis axis);
  std::string kind() const override;
  /// The whole extent of the split axis.
  std::int64_t whole() const noexcept { return n_; }
  SplitAxis axis() const noexcept { return axis_; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  std::int64_t n_;
  SplitAxis axis_;
};

/// {rows, n, inner...} -> {rows, this rank's shard of n, inner...}.
template <typename T>
class ScatterSplitNode : public GroupNode<T> {
 public:
  ScatterSplitNode(op::OpPtr<T> x, GroupPtr group, SplitAxis axis);
  std::string kind() const override;
  SplitAxis axis() const noexcept { return axis_; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  SplitAxis axis_;
};

template <op::OpLike X>
op::Expr<op::op_value_t<X>> copy_to_group(const X& x, GroupPtr group) {
  using T = op::op_value_t<X>;
  return op::make_expr<T>(std::make_shared<CopyToGroupNode<T>>(op::to_node(x), std::move(group)));
}
template <op::OpLike X>
op::Expr<op::op_value_t<X>> reduce_from_group(const X& x, GroupPtr group) {
  using T = op::op_value_t<X>;
  return op::make_expr<T>(std::make_shared<ReduceFromGroupNode<T>>(op::to_node(x), std::move(group)));
}
/// `cols`: the full width, whose shard_of this rank's x holds.
template <op::OpLike X>
op::Expr<op::op_value_t<X>> gather_columns(const X& x, GroupPtr group, std::int64_t cols) {
  using T = op::op_value_t<X>;
  return op::make_expr<T>(
      std::make_shared<GatherSplitNode<T>>(op::to_node(x), std::move(group), cols, SplitAxis::columns));
}
template <op::OpLike X>
op::Expr<op::op_value_t<X>> scatter_columns(const X& x, GroupPtr group) {
  using T = op::op_value_t<X>;
  return op::make_expr<T>(std::make_shared<ScatterSplitNode<T>>(op::to_node(x), std::move(group), SplitAxis::columns));
}
/// `channels`: the whole channel count, whose shard_of this rank's x holds.
template <op::OpLike X>
op::Expr<op::op_value_t<X>> gather_channels(const X& x, GroupPtr group, std::int64_t channels) {
  using T = op::op_value_t<X>;
  return op::make_expr<T>(
      std::make_shared<GatherSplitNode<T>>(op::to_node(x), std::move(group), channels, SplitAxis::channels));
}
template <op::OpLike X>
op::Expr<op::op_value_t<X>> scatter_channels(const X& x, GroupPtr group) {
  using T = op::op_value_t<X>;
  return op::make_expr<T>(
      std::make_shared<ScatterSplitNode<T>>(op::to_node(x), std::move(group), SplitAxis::channels));
}

}  // namespace magmadnn::distributed::mp
