/// @file inference_plan.h
/// op::InferencePlan<T>: evaluation without gradients that recycles forward
/// buffers whose lifetime has ended.
///
///   auto out = op::optimize(model_output);
///   op::InferencePlan<float> plan(out);
///   for (auto& batch : data) { X->set_value(batch); use(plan.run()); }
///
/// The plan attaches one buffer pool (buffer_pool.h) to every interior node
/// of the graph. run() evaluates the nodes in topological order; as soon as
/// the last consumer of an interior node has been evaluated, that node's
/// output buffer goes back to the pool, and a later node of the same size
/// takes it instead of allocating. Hence:
///  - the bytes of forward buffers alive at once (stats().peak_in_use_bytes)
///    drop from the sum of all intermediates to the most that are live at the
///    same time;
///  - from the second run() of the same graph on, nodes that write through
///    their output buffer (elementwise, chains, matmul, linear, softmax,
///    transpose, losses) allocate nothing: the pool already holds every
///    buffer a run needs (stats().allocations counts them).
/// Guarantees: run() returns the same values as root->eval(); leaves and the
/// root keep their tensors; a buffer is recycled only after every consumer in
/// the graph has read it and only if no other node's output aliases it (a
/// reshape view, for instance), so no value is overwritten while needed.
/// Costs and limits: recycled nodes lose their cached value (they are marked
/// stale), so each run recomputes them (the root included: its buffer goes
/// back to the pool when the next run starts), and pointers obtained earlier
/// from their eval() or get_output_tensor() no longer hold values. Gradients need
/// every forward value, so this is for inference only: op::gradients and
/// eval() never recycle, and op::gradients after a run() simply recomputes
/// the recycled values first. Build the plan after the graph passes; the plan
/// keeps its nodes alive, and a graph rewritten later needs a new plan.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "magmadnn/compute/buffer_pool.h"
#include "magmadnn/compute/expr.h"

namespace magmadnn::op {

template <typename T>
class InferencePlan {
 public:
  /// `reuse_buffers` = false still lends buffers through the pool (so the
  /// counters are comparable) but never takes them back.
  explicit InferencePlan(const Expr<T>& root, bool reuse_buffers = true);
  /// Detaches the pool from the nodes (they allocate normally again), so its
  /// idle buffers are freed with the plan rather than kept by the graph.
  ~InferencePlan();
  InferencePlan(const InferencePlan&) = delete;
  InferencePlan& operator=(const InferencePlan&) = delete;
  InferencePlan(InferencePlan&&) noexcept = default;
  InferencePlan& operator=(InferencePlan&&) noexcept = default;

  /// Evaluates the graph (no gradient bookkeeping) and returns the root's
  /// value, valid until the next run or evaluation.
  const Tensor<T>& run();

  const BufferStats& stats() const noexcept { return pool_->stats(); }
  BufferPool<T>& pool() noexcept { return *pool_; }

 private:
  bool releasable(std::size_t k) const;

  std::vector<OpPtr<T>> nodes_;                  // topological order; the root is last
  std::vector<std::vector<std::size_t>> inputs_;  // per node: positions of its inputs in nodes_
  std::vector<int> uses_;                         // per node: input slots that read it
  std::shared_ptr<BufferPool<T>> pool_;
  bool reuse_;
};

}  // namespace magmadnn::op
