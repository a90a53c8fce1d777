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
///
/// Columns are split by shard_of (shard.h). The group is every rank of the
/// communicator, held by shared ownership so the graph keeps it alive.
///
/// Requires: every rank of the group builds the same graph and evaluates and
/// differentiates it in the same order (each forward and backward pass is a
/// collective call); 2-D inputs for the column ops. Guarantees: with one
/// rank each op is the identity both ways and communicates nothing; the
/// communicator's watchdog bounds every wait, so a rank that stops
/// evaluating raises CommError on the others instead of hanging.
#pragma once

#include <memory>

#include "magmadnn/compute/expr.h"
#include "magmadnn/distributed/communicator.h"
#include "magmadnn/distributed/model_parallel/shard.h"

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

/// {rows, this rank's shard of `cols`} -> {rows, cols}.
template <typename T>
class GatherColumnsNode : public GroupNode<T> {
 public:
  GatherColumnsNode(op::OpPtr<T> x, GroupPtr group, std::int64_t cols);
  std::string kind() const override { return "gather_columns"; }
  std::int64_t cols() const noexcept { return cols_; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  std::int64_t cols_;
};

/// {rows, cols} -> {rows, this rank's shard of cols}.
template <typename T>
class ScatterColumnsNode : public GroupNode<T> {
 public:
  ScatterColumnsNode(op::OpPtr<T> x, GroupPtr group) : GroupNode<T>("scatter_columns", std::move(x), std::move(group)) {}
  std::string kind() const override { return "scatter_columns"; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;
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
  return op::make_expr<T>(std::make_shared<GatherColumnsNode<T>>(op::to_node(x), std::move(group), cols));
}
template <op::OpLike X>
op::Expr<op::op_value_t<X>> scatter_columns(const X& x, GroupPtr group) {
  using T = op::op_value_t<X>;
  return op::make_expr<T>(std::make_shared<ScatterColumnsNode<T>>(op::to_node(x), std::move(group)));
}

}  // namespace magmadnn::distributed::mp
