/// @file stage.h
/// pipeline::Stage<T>: one stage of a pipeline, i.e. consecutive layers of
/// a network rebuilt on a placeholder that receives the previous stage's
/// activations (the first stage's receives the batch). It runs the forward
/// and backward passes of micro-batches in any order a schedule gives
/// (schedule.h) and sums the parameter gradients over them. No messages:
/// pipeline.h moves the tensors between stages.
///
/// Activations between a micro-batch's forward and its backward: the graph
/// holds one micro-batch's values at a time, so the stage keeps each
/// in-flight micro-batch's *input* and, when the graph holds another
/// micro-batch by the time the backward comes, runs that micro-batch's
/// forward again first (GPipe's re-materialisation). What a stage keeps per
/// micro-batch in flight is therefore its input, whose bytes
/// stash_bytes() counts. The forward run again leaves layer state as it was
/// (BatchNorm's running statistics are updated once per micro-batch, by its
/// first forward).
///
/// Requires: the factories build layers whose forward is a function of the
/// input and the weights (no dropout: a forward run again would draw
/// another mask; ValueError naming the layer); a backward of micro-batch m
/// after its forward and before the next forward of m.
/// Guarantees: gradients() after backward() of every micro-batch are the sums
/// of the micro-batches' gradients, each scaled as backward() says; the
/// input gradient returned is d(loss)/d(input) of that micro-batch.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/compute/variable.h"
#include "magmadnn/layer/layer.h"
#include "magmadnn/model/params.h"

namespace magmadnn::distributed::pipeline {

/// Builds one layer of a network on `input` (the previous layer's output).
template <typename T>
using LayerFactory = std::function<std::shared_ptr<layer::Layer<T>>(const op::Expr<T>& input)>;

/// ValueError naming layer `index` when a forward run again would not
/// repeat its values (a dropout layer).
template <typename T>
void check_recomputable(const layer::Layer<T>& l, int index);

template <typename T>
class Stage {
 public:
  using LayerPtr = std::shared_ptr<layer::Layer<T>>;
  /// Layers [begin, end) of `factories`, built on a placeholder of
  /// {-1, in_sample...} in `mem` memory; `last`: the stage ends in the loss
  /// (model/loss_graph.h) against labels {-1, out_sample...}.
  Stage(const std::vector<LayerFactory<T>>& factories, int begin, int end, std::vector<std::int64_t> in_sample,
        bool last, optimizer::loss_t loss, memory_t mem);

  /// Copies the weights of `whole` (the whole network's layers, one per
  /// factory) for this stage's layers, so it starts where the one-process
  /// network starts. ShapeError naming a weight whose shape differs.
  void copy_weights_from(const std::vector<LayerPtr>& whole);

  /// The forward pass of micro-batch `micro` on input x {n, in_sample...};
  /// the last stage also takes its labels. Returns the output (the last
  /// stage: the loss, {1}), valid until the next call. Keeps a copy of x
  /// until the micro-batch's backward.
  const Tensor<T>& forward(int micro, const Tensor<T>& x, const Tensor<T>* labels = nullptr);
  /// A forward pass that keeps nothing (evaluation): as forward(), but no
  /// micro-batch's input is kept and no backward may follow.
  const Tensor<T>& infer(const Tensor<T>& x, const Tensor<T>* labels = nullptr);
  /// The backward pass of `micro`: `grad_out` is d(loss)/d(output) (null on
  /// the last stage, which starts from its loss times `seed`). Adds the
  /// parameter gradients to gradients(); returns d(loss)/d(input) when
  /// `input_grad`, else an empty tensor.
  Tensor<T> backward(int micro, const Tensor<T>* grad_out, T seed, bool input_grad);
  /// Starts a new batch: the gradient sums to zero.
  void zero_gradients();

  /// This stage's parameters in layer order, and their gradient sums
  /// (one per parameter, valid after a backward).
  const std::vector<op::Var<T>>& parameters() const noexcept { return params_; }
  std::vector<Tensor<T>>& gradients() noexcept { return grads_; }
  const std::vector<LayerPtr>& layers() const noexcept { return layers_; }
  /// Train (true) or eval mode of every layer of the stage.
  void set_training(bool training);
  /// The output node (the prediction on the last stage) and, on the last
  /// stage, what accuracy reads.
  op::Expr<T> output() const { return out_; }
  op::Expr<T> score() const { return score_; }

  /// Bytes of the micro-batch inputs kept now, and forwards run again so far.
  std::int64_t stash_bytes() const noexcept { return stash_bytes_; }
  std::int64_t recomputes() const noexcept { return recomputes_; }

 private:
  void rematerialise(int micro);
  void accumulate(op::GradTable<T>& table);

  std::vector<LayerPtr> layers_;
  op::Var<T> x_ph_, y_ph_, g_ph_;
  op::Expr<T> out_, score_, loss_, root_;
  std::vector<op::Var<T>> params_;
  std::vector<Tensor<T>> grads_;
  std::size_t begin_ = 0;
  bool last_ = false;
  bool have_grads_ = false;
  int current_ = -1;  // the micro-batch whose values the graph holds
  std::map<int, Tensor<T>> inputs_, labels_;
  std::int64_t stash_bytes_ = 0, recomputes_ = 0;
};

}  // namespace magmadnn::distributed::pipeline
