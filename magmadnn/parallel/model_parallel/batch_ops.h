/// @file batch_ops.h
/// The two graph ops a hybrid plan (run/parallel_plan.h) puts where a
/// data-parallel section of the network meets a model-parallel one. They
/// move activations along the batch axis (axis 0, any rank of tensor):
///
///   op                       forward                              backward
///   gather_batch(x, whole)   allgather of the ranks' row shards   this rank's rows of dy
///   scatter_batch(x)         this rank's rows of x                allgather of the ranks' dx rows
///
/// Rows are split by shard_of (shard.h) over the group, in rank order, so
/// gathering the shards of a batch gives back that batch, row for row.
///
/// Each op is the adjoint of the other when the tensor on the whole batch
/// is the same on every rank (it is, in a hybrid plan: everything computed
/// on the whole batch is replicated or split by model-parallel layers whose
/// collectives make their input gradients whole). So with the loss taken on
/// the whole batch on every rank, the backward pass of gather_batch hands
/// each rank the gradient of that one loss with respect to its own rows,
/// and the data-parallel parameters below it receive their part of one
/// process's gradient: the ranks' parts must be summed, not averaged.
///
/// Requires: every rank of the group evaluates and differentiates the graph
/// in the same order (each pass is a collective call); a batch of at least
/// one row per rank (ShapeError otherwise). `whole` is only read for its
/// number of rows (the batch the shards came from) and must need no
/// gradient (the network's input placeholder does not): none flows to it.
/// Guarantees: with one rank both ops are the identity both ways and
/// communicate nothing.
#pragma once

#include "magmadnn/parallel/model_parallel/group_ops.h"

namespace magmadnn::distributed::mp {

/// {this rank's shard of N rows, ...} -> {N, ...}; N is `whole`'s rows.
/// (Two inputs, so not a GroupNode, whose constructor takes one.)
template <typename T>
class GatherBatchNode : public op::Operation<T> {
 public:
  GatherBatchNode(op::OpPtr<T> x, op::OpPtr<T> whole, GroupPtr group);
  std::string kind() const override { return "gather_batch"; }
  Communicator& group() const noexcept { return *group_; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;

 private:
  GroupPtr group_;
};

/// {N, ...} -> {this rank's shard of the N rows, ...}.
template <typename T>
class ScatterBatchNode : public GroupNode<T> {
 public:
  ScatterBatchNode(op::OpPtr<T> x, GroupPtr group) : GroupNode<T>("scatter_batch", std::move(x), std::move(group)) {}
  std::string kind() const override { return "scatter_batch"; }
  void backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) override;

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override;
  void forward() override;
};

/// The whole batch from each rank's shard of it; `whole` is any node whose
/// rows are the whole batch's (the network's input, say).
template <op::OpLike X, op::OpLike W>
op::Expr<op::op_value_t<X>> gather_batch(const X& x, const W& whole, GroupPtr group) {
  using T = op::op_value_t<X>;
  return op::make_expr<T>(std::make_shared<GatherBatchNode<T>>(op::to_node(x), op::to_node(whole), std::move(group)));
}

/// This rank's shard of the rows of a batch every rank holds whole.
template <op::OpLike X>
op::Expr<op::op_value_t<X>> scatter_batch(const X& x, GroupPtr group) {
  using T = op::op_value_t<X>;
  return op::make_expr<T>(std::make_shared<ScatterBatchNode<T>>(op::to_node(x), std::move(group)));
}

/// The tensor collective under gather_batch: the {rows, ...} tensor whose
/// rows shard_of(rows, size, r) are rank r's `local`, on every rank.
template <typename T>
Tensor<T> allgather_rows(Communicator& comm, const Tensor<T>& local, std::int64_t rows);

}  // namespace magmadnn::distributed::mp
