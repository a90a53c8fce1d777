/// @file optimizer_base.h
/// Optimizer<T>: the base of every optimizer (slides: "Optimizer").
///
///   optimizer::GradientDescent opt(0.05);
///   opt.minimize(loss, {x});          // ONE step: gradients, then update
///
/// Plain gradient descent (no momentum) is applied inside the backward pass
/// (op::backward_update): a linear op's weight update becomes the beta of the
/// GEMM that computes its gradient, so no gradient buffer or update pass
/// exists. Other optimizers compute the gradients, then update.
///
/// Requires: every node in `vars` is an op::Variable (var, constant or
/// placeholder); others raise ValueError. Guarantees: updates run where the
/// parameters live (only tensor/math functions are used, so GPU tensors are
/// updated on the GPU); each updated variable is marked changed, so the next
/// eval() recomputes what depends on it; per-parameter state (moments) is
/// created lazily with the parameter's shape and memory, and exposed by
/// state() for checkpoints.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "magmadnn/compute/gradients.h"
#include "magmadnn/compute/variable.h"
#include "magmadnn/optimizer/schedule.h"

namespace magmadnn::model {
template <typename T>
class NeuralNetwork;
}  // namespace magmadnn::model

namespace magmadnn::optimizer {

/// L2 adds decay * param to the gradient; Decoupled (AdamW) shrinks the
/// parameter by lr * decay * param before the update.
enum class WeightDecay { L2, Decoupled };

template <typename T>
class Optimizer {
 public:
  explicit Optimizer(double learning_rate);
  virtual ~Optimizer() = default;

  /// One optimization step on `loss` w.r.t. `vars`.
  void minimize(const op::Expr<T>& loss, const std::vector<op::Expr<T>>& vars);
  /// One update of `vars` with gradients from `grads` (each var must have one).
  void step(const std::vector<op::Expr<T>>& vars, op::GradTable<T>& grads);

  double base_learning_rate() const noexcept { return base_lr_; }
  void set_learning_rate(double lr) noexcept { base_lr_ = lr; }
  /// The rate the next step will use (after the schedule).
  double learning_rate() const;
  void set_schedule(std::shared_ptr<const LRSchedule> schedule) { schedule_ = std::move(schedule); }
  void set_weight_decay(double decay, WeightDecay mode = WeightDecay::L2);

  /// This step's update as var = beta * var + alpha * gradient, when every
  /// parameter's update has that form (GradientDescent without momentum,
  /// with or without weight decay), for op::backward_update to apply inside
  /// the backward pass; nullopt for optimizers with state. minimize() and
  /// NeuralNetwork::fit take that path on their own.
  std::optional<op::InPlaceUpdate<T>> in_place_update() const;
  /// Counts a step that op::backward_update applied with in_place_update()'s
  /// coefficients, so the schedule advances as after step().
  void count_in_place_step() noexcept { ++steps_; }

  /// Called by a model::NeuralNetwork built with this optimizer, once the
  /// network is complete. The default does nothing; an optimizer that needs
  /// the network overrides it (v1's DistMomentumSGD attaches the allreduce
  /// strategy there, as the network's training plugin).
  virtual void attached_to(model::NeuralNetwork<T>& /*net*/) {}

  /// Steps taken so far (restore it with the state when resuming).
  std::int64_t step_count() const noexcept { return steps_; }
  void set_step_count(std::int64_t n) noexcept { steps_ = n; }

  /// Every state tensor, named "<variable name>/<slot>" (a "#k" suffix
  /// separates variables that share a name). Writable: load a checkpoint by
  /// copying into them (after one step created them, or via init_state()).
  std::map<std::string, Tensor<T>*> state();
  /// Creates the state of `vars` now (zeros), e.g. before loading a checkpoint.
  void init_state(const std::vector<op::Expr<T>>& vars);
  /// The state of one variable as (slot name, tensor), in slot order,
  /// created (zeros) if it does not exist yet. Lets a model name the state
  /// after its own structure rather than after variable names.
  std::vector<std::pair<std::string, Tensor<T>*>> slots_of(const op::Expr<T>& var);

  /// Sums `n` partial sums (of squares) over the slices of one tensor split
  /// across ranks, in place; a collective over the ranks holding the slices.
  using SliceSum = std::function<void(double* partial, std::size_t n)>;
  /// Declares `var` one rank's slice of a tensor split over a model-parallel
  /// group (a split layer's weight: NeuralNetwork declares every one). An
  /// optimizer whose step reads a whole-tensor quantity (LARS's and LAMB's
  /// norms) then sums its per-slice parts with `sum` before using them, so
  /// the step is the one-process step of the whole tensor. Every rank of the
  /// group must step the same variables in the same order (it does: each
  /// holds the same layers). An empty `sum` undeclares it.
  void set_slice_sum(const op::Expr<T>& var, SliceSum sum);
  /// Whether `var` was declared a slice.
  bool is_slice(const op::Expr<T>& var) const { return slice_sums_.count(var.get()) != 0; }

 protected:
  /// Names of the state slots this optimizer keeps per parameter.
  virtual std::vector<std::string> slot_names() const { return {}; }
  /// Updates `param` in place given its gradient, the step's rate and its
  /// state slots (in slot_names() order). `t` is the 1-based step number.
  virtual void update(Tensor<T>& param, const Tensor<T>& grad, double lr, std::int64_t t,
                      std::vector<Tensor<T>>& slots) = 0;
  /// True when an L2 penalty gives exactly the update of decoupled decay
  /// (p *= 1 - lr * decay before the plain update), as for SGD without
  /// momentum: the step then takes the decoupled path, which needs no copy
  /// of the gradient.
  virtual bool l2_is_decoupled() const { return false; }
  /// True when update() is exactly param -= lr * grad, with no state.
  virtual bool update_is_plain_descent() const { return false; }
  /// update() after param *= keep (decoupled weight decay, keep = 1 - lr *
  /// decay). The default does the two in turn; an optimizer that can fold
  /// the scaling into its update overrides this to save a pass over param.
  virtual void update_decayed(Tensor<T>& param, const Tensor<T>& grad, double lr, std::int64_t t,
                              std::vector<Tensor<T>>& slots, T keep);
  /// param = beta * param + alpha * x, for update() to make its last write
  /// to the parameter with (every optimizer here does). Under bf16 or fp16 it
  /// writes the parameter's low-precision copy with it when a GEMM reads
  /// that copy (op::LowPrecisionCache::axpby), so the next forward casts no
  /// weight. An update() that writes the parameter otherwise stays correct:
  /// the parameter is then cast again by the next GEMM that reads it.
  void write_param(T alpha, const Tensor<T>& x, T beta, Tensor<T>& param);
  /// Inside update(): sums `partial[0..n)` over the slices of the parameter
  /// being updated when it is a slice (set_slice_sum), else leaves them.
  /// Every rank holding a slice must make the same calls.
  void sum_over_slices(double* partial, std::size_t n) const;

 private:
  struct ParamState {
    op::OpPtr<T> node;
    std::string name;
    std::vector<Tensor<T>> slots;
    Tensor<T> decayed;  // gradient + decay * param (L2), kept to avoid an allocation per step
  };
  ParamState& state_of(const op::Expr<T>& var);

  double base_lr_;
  std::shared_ptr<const LRSchedule> schedule_;
  double decay_ = 0.0;
  WeightDecay decay_mode_ = WeightDecay::L2;
  std::int64_t steps_ = 0;
  std::unordered_map<const op::Operation<T>*, ParamState> states_;
  std::vector<const op::Operation<T>*> order_;  // creation order, for stable names
  // During step(), the variable being updated and its node's low-precision cache
  // (non-owning; for write_param).
  const Tensor<T>* param_ = nullptr;
  op::LowPrecisionCache* param_cache_ = nullptr;
  std::unordered_map<const op::Operation<T>*, SliceSum> slice_sums_;
  const SliceSum* slice_sum_ = nullptr;  // during step(): the updated variable's, or null
};

}  // namespace magmadnn::optimizer
