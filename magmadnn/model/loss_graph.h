/// @file loss_graph.h
/// The loss a network trains with, built on its prediction: one rule shared
/// by model::NeuralNetwork and the last stage of a pipeline
/// (parallel/pipeline/stage.h), so both train on the same loss.
///
/// Rule: CROSS_ENTROPY on a softmax output is the fused, stable softmax
/// cross-entropy on the softmax's input (the logits); on another output of
/// probabilities (sigmoid) v1's cross-entropy of probabilities; on any other
/// output (logits, as PyTorch's CrossEntropyLoss) the fused one on the
/// output. MSE: the mean squared error. Every loss is a mean over the batch
/// (compute/loss.h). ValueError for another loss_t value.
#pragma once

#include "magmadnn/compute/expr.h"
#include "magmadnn/model/params.h"

namespace magmadnn::model {

template <typename T>
struct LossGraph {
  op::Expr<T> score;  ///< what accuracy reads: the logits under a fused softmax, else the output
  op::Expr<T> loss;   ///< shape {1}
};

/// The loss of prediction `out` (after graph passes) against labels `y`.
template <typename T>
LossGraph<T> make_loss_graph(const op::Expr<T>& out, const op::Expr<T>& y, optimizer::loss_t loss);

}  // namespace magmadnn::model
