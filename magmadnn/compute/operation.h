/// @file operation.h
/// op::Operation<T>: one node of the compute graph (slides "Operation &
/// Graph", paper §2.3).
///
/// A node holds its inputs by shared ownership and caches its output tensor
/// after eval(). Shapes are inferred at evaluation time from the inputs'
/// current values, so a batch size is never baked into a graph.
///
/// Caching and versions: every node carries a version number that changes
/// whenever its output changes. A node records the versions of its inputs at
/// its last forward pass and recomputes only if one of them moved, so after a
/// variable changes, eval() recomputes exactly the nodes that depend on it.
///
/// Ownership (see also expr.h):
///  - nodes are only ever created by the op:: factories, with
///    std::make_shared; never `new` one yourself;
///  - user code holds op::Expr<T> / op::Var<T> handles (shared owners);
///  - v1 code that stores a raw `op::Operation<T>*` gets one from the handle's
///    implicit conversion, which *pins* the node in a process-wide arena so the
///    pointer stays valid; `delete p` on such a pointer runs this class's
///    destroying operator delete, which unpins it (dropping that one shared
///    reference) instead of destroying the node. The node dies when its last
///    owner goes. magmadnn_finalize() releases whatever is still pinned
///    (op::release_pinned_nodes()).
///
/// Thread safety: a graph may be built and evaluated by one thread at a time;
/// the pin arena itself is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "magmadnn/compute/buffer_pool.h"
#include "magmadnn/compute/low_precision_cache.h"
#include "magmadnn/core/shape.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::op {

template <typename T>
class Operation;
template <typename T>
using OpPtr = std::shared_ptr<Operation<T>>;

/// Releases every node pinned by raw-pointer conversions. Called by
/// magmadnn_finalize(); raw pointers obtained earlier are invalid afterwards
/// unless a handle still owns their node.
void release_pinned_nodes();
/// Number of nodes currently pinned (for tests and leak diagnostics).
std::size_t pinned_node_count();

namespace detail {
/// Pins `node` (idempotent: a node is pinned at most once).
void pin_node(const void* key, std::shared_ptr<const void> owner);
/// Unpins `key` if pinned; the shared reference is dropped outside the lock.
void unpin_node(const void* key) noexcept;
}  // namespace detail

template <typename T>
class Operation : public std::enable_shared_from_this<Operation<T>> {
 public:
  using value_type = T;

  virtual ~Operation() = default;
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;

  /// Evaluates the inputs (in topological order, iteratively) and then this
  /// node, each only if stale; `recompute` forces every node to recompute.
  /// Returns the cached output, valid until the next evaluation. For a
  /// Variable this is the variable's own tensor: writing through it changes
  /// the variable (a Variable's eval() therefore counts as a change).
  Tensor<T>* eval(bool recompute = false);

  /// Output shape from the inputs' current shapes, without computing values.
  /// Throws ShapeError (naming the op and the shapes) if they do not fit, and
  /// ValueError for a placeholder that has no value yet.
  Shape get_output_shape() const;
  const std::vector<OpPtr<T>>& get_inputs() const noexcept { return inputs_; }
  const std::string& get_name() const noexcept { return name_; }
  /// The expression below this node, e.g. "add(matmul(W, X), b)".
  virtual std::string to_string() const;
  /// The op's kind: "add", "matmul", "variable", ...
  virtual std::string kind() const = 0;

  /// The cached output (MagmaDNN v1). The non-const form counts as a write
  /// (the node's version changes), because callers may modify the tensor.
  Tensor<T>* get_output_tensor();
  const Tensor<T>* get_output_tensor() const { return &output_; }
  /// The cached output, read-only (no version change).
  const Tensor<T>& output() const noexcept { return output_; }

  /// Changes whenever the output changes.
  std::uint64_t version() const noexcept { return version_; }
  /// The output rounded to L (bfloat16 or half: the run's low precision),
  /// for the mixed-precision GEMMs and convolutions that read it
  /// (autocast.h). Cast on the first call after the output's contents
  /// changed, served from a copy kept on the node otherwise;
  /// low_precision_casts() counts the casts.
  template <typename L>
  const Tensor<L>& low_output() const {
    return low_.template get<L>(output_);
  }
  std::uint64_t low_precision_casts() const noexcept { return low_.casts(); }
  /// The cache behind low_output(), for code that writes the output in
  /// place and can keep the copy current as it does (an optimizer's update,
  /// LowPrecisionCache::axpby).
  LowPrecisionCache& low_precision_cache() noexcept { return low_; }
  /// Number of forward computations so far (for tests and profiling).
  std::uint64_t eval_count() const noexcept { return eval_count_; }
  /// Forces a recomputation at the next eval (e.g. after a mode change).
  void invalidate() noexcept { dirty_ = true; }
  /// Train / eval mode for ops that differ (dropout, batchnorm); others
  /// ignore it. See op::set_training for a whole graph.
  virtual void set_training(bool /*training*/) {}

  /// Reverse-mode step. Given d(loss)/d(output) in `grad_out` (output's
  /// shape), sets grad_inputs[i] to d(loss)/d(input i) for every i with
  /// needed[i], each a fresh tensor of input i's shape (never a forward
  /// buffer, never grad_out itself). Requires the node's forward values to be
  /// current (op::gradients evaluates the graph first).
  virtual void backward(const Tensor<T>& grad_out, const std::vector<bool>& needed,
                        std::vector<Tensor<T>>& grad_inputs) = 0;

  /// Whether input i's gradient is grad_out itself, unchanged: an add's
  /// input of the output's shape. The engine then hands grad_out over without
  /// a copy (moving it into the input's slot, or adding it to the input's
  /// running sum) and leaves needed[i] false in its call to backward(). The
  /// default says no. Called only after the forward pass, so shapes are set.
  virtual bool gradient_is_grad_out(std::size_t i) const {
    (void)i;
    return false;
  }

  /// Where op::backward_update sends an input's gradient instead of
  /// returning it: *dst = beta * *dst + alpha * gradient.
  struct UpdateTarget {
    Tensor<T>* dst;
    T alpha, beta;
    /// dst's low-precision copy (its variable's), which an op that applies
    /// the update itself keeps current (LowPrecisionCache::gemm_update);
    /// null when none.
    LowPrecisionCache* low = nullptr;
  };
  /// backward(), except that an op may fold the gradient of an input i with
  /// targets[i] set straight into that target (e.g. as the beta of the GEMM
  /// that produces it) and set applied[i] instead of filling
  /// grad_inputs[i]. Requires: targets[i] is set only for a variable this op
  /// is the only consumer of, so the op must apply the update after
  /// everything it computes from input i's value. The default folds nothing
  /// and leaves the updates to the caller.
  virtual void backward_into(const Tensor<T>& grad_out, const std::vector<bool>& needed,
                             std::vector<Tensor<T>>& grad_inputs, const std::vector<const UpdateTarget*>& targets,
                             std::vector<bool>& applied) {
    (void)targets, (void)applied;
    backward(grad_out, needed, grad_inputs);
  }

  /// `delete p` on a raw pointer from a handle's conversion: unpins instead
  /// of destroying (see the file comment). Safe because nodes come from
  /// std::make_shared, which never uses a delete-expression.
  static void operator delete(Operation* p, std::destroying_delete_t) noexcept {
    detail::unpin_node(static_cast<const void*>(p));
  }

  // -- graph machinery (used by the evaluator, autodiff and graph passes) ------
  /// Evaluates this node alone, assuming its inputs are current. Returns
  /// true if it recomputed.
  bool eval_self(bool recompute);
  /// Replaces input i (graph passes). Invalidates this node.
  void replace_input(std::size_t i, OpPtr<T> node);
  /// Buffer reuse (inference_plan.h): with a pool attached, a new output
  /// buffer comes from the pool instead of a fresh allocation.
  void set_buffer_pool(std::shared_ptr<BufferPool<T>> pool) noexcept { pool_ = std::move(pool); }
  const std::shared_ptr<BufferPool<T>>& buffer_pool() const noexcept { return pool_; }
  /// Hands the output buffer back to the attached pool (no-op without one)
  /// and marks the node stale, so the next eval recomputes it. The caller
  /// guarantees that nothing reads the value any more and that no live view
  /// aliases it.
  void release_output();
  /// Drops this node's reference to its output and marks the node stale, so
  /// the next eval recomputes it (the storage returns to the backend's pool
  /// once no view of it remains). For the backward pass that frees each
  /// forward value after its last reader (gradients.h, ForwardValues). No-op
  /// for a leaf (its tensor is its value) and for a node with a buffer pool
  /// attached (the plan that attached it recycles its buffers itself).
  void drop_output() noexcept;

 protected:
  Operation(std::string name, std::vector<OpPtr<T>> inputs);

  /// Output shape for the given input shapes; throws ShapeError if they do not fit.
  virtual Shape infer_shape(const std::vector<Shape>& in) const = 0;
  /// Computes output_ from the inputs' outputs (which are current).
  virtual void forward() = 0;
  /// Leaves (no inputs) may refuse to be evaluated (an unset placeholder).
  virtual void check_ready() const {}
  /// Changes the version (a leaf's value changed).
  void bump_version() noexcept { ++version_; }

  const Tensor<T>& in(std::size_t i) const { return inputs_[i]->output_; }
  /// output_ with shape `s`, reallocated only when the shape changes, in the
  /// memory of the first input (or `like`); taken from the buffer pool when
  /// one is attached.
  Tensor<T>& output_buffer(const Shape& s, const Tensor<T>& like);

  std::vector<OpPtr<T>> inputs_;
  std::string name_;
  Tensor<T> output_;

 private:
  bool evaluated_ = false;
  bool dirty_ = false;
  std::uint64_t version_ = 0;
  mutable LowPrecisionCache low_;
  std::uint64_t eval_count_ = 0;
  std::vector<std::uint64_t> seen_versions_;
  std::shared_ptr<BufferPool<T>> pool_;
};

/// The nodes reachable from `root`, inputs before their consumers, each once.
/// Iterative, so deep graphs do not exhaust the stack.
template <typename T>
std::vector<Operation<T>*> topological_order(Operation<T>* root);

/// Sets train (true) or eval (false) mode on every node below `root`.
template <typename T>
void set_training(Operation<T>* root, bool training);

}  // namespace magmadnn::op
