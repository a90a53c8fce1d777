/// @file parallel_plan.h
/// How a config's layers are laid out over the ranks: the hybrid plan of
/// data- and model-parallel layers (docs/hybrid.md; docs/notes/hybrid-plans.md).
/// plan_parallel() reads only the spec, never the rank count, so a config
/// means the same plan on any number of ranks; build_network turns the plan
/// into layers and transitions (with one rank: the plain network).
///
/// A dense or conv2d layer takes its "parallel" value, or distributed.parallel:
///  - "data": replicated weights, the layer runs on this rank's rows of the
///    global batch, its gradients are summed across ranks;
///  - "model": its weight is split over the ranks (dense: Megatron-LM's
///    column/row-parallel layers; conv2d: split by output channels);
///  - "auto" (Krizhevsky's "one weird trick"): conv2d -> data (much compute,
///    few weights), dense -> model (many weights, little compute), where two
///    consecutive dense layers pair Megatron-style (column-parallel without
///    gather, elementwise activation, row-parallel on the split input); an
///    unpaired dense layer keeps the layout it finds (replicated on the whole
///    batch after a model-parallel section, e.g. the 10-class head;
///    data-parallel inside a data-parallel section).
/// Under "model" an unpaired dense layer is column-parallel with its output
/// gathered. Layers without a layout (pool, flatten, activation, ...) run on
/// whatever their input is.
///
/// A plan without a model-parallel layer is plain data parallelism
/// (hybrid() false): the sampler gives each rank its rows, as before. A
/// hybrid plan feeds every rank the whole global batch (the labels are
/// needed whole: the loss is the global batch's, on every rank), and the
/// transitions cut and join the batch: scatter_batch before a data-parallel
/// layer that follows whole-batch activations, gather_batch before a
/// model-parallel layer that follows batch shards, and a gather_batch before
/// the loss when the network ends in a data-parallel section.
///
/// Guarantees: plan_parallel() throws ConfigError naming the layer
/// (`layers[4].parallel: ...`) for a plan it cannot serve: dropout on
/// whole-batch activations (every rank would have to draw the same mask),
/// and, for a hybrid plan, a strategy other than allreduce
/// (`distributed.strategy: ...`) and a network with branches (layers that
/// name their inputs, add, concat: run/layer_kinds.h), whose layers train
/// data-parallel only for now.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "magmadnn/run/spec.h"

namespace magmadnn::run {

/// Where a layer runs and what its weights are.
enum class Placement {
  data,             ///< on this rank's batch shard; weights replicated, gradients summed across ranks
  replicated,       ///< on the whole batch, on every rank alike; weights replicated, gradients already whole
  column,           ///< dense, column-parallel; output split by columns (the first of a Megatron pair)
  column_gathered,  ///< dense, column-parallel; output gathered (an unpaired "model" dense layer)
  row,              ///< dense, row-parallel on a column-split input (the second of a pair)
  split_columns,    ///< an activation between the two layers of a pair: on this rank's columns
  channels,         ///< conv2d split by output channels (layer::channel_parallel_conv2d), output gathered
};
const char* placement_name(Placement p) noexcept;
/// Whether a layer of this placement holds a slice of a split weight.
bool is_model_parallel(Placement p) noexcept;

/// A change of layout of the activations, inserted before a layer or before the loss.
enum class Transition {
  none,
  gather_batch,   ///< batch shards -> the whole batch (allgather; backward: own rows of the gradient)
  scatter_batch,  ///< the whole batch -> this rank's shard (own rows; backward: allgather)
};
const char* transition_name(Transition t) noexcept;

struct LayerPlan {
  Placement placement = Placement::data;
  Transition before = Transition::none;
};

struct ParallelPlan {
  std::vector<LayerPlan> layers;                  ///< one per spec.layers entry
  Transition before_input = Transition::none;     ///< scatter_batch when the first layers are data-parallel
  Transition before_loss = Transition::none;      ///< gather_batch when the last layers are data-parallel
  /// Whether any layer is model-parallel (else the plan is plain data parallelism).
  bool hybrid() const noexcept;
};

/// The plan of `spec` (see the file comment). ConfigError for a plan that cannot be served.
ParallelPlan plan_parallel(const TrainSpec& spec);

/// The plan as JSON, as summary.json records it: {"hybrid", "before_input",
/// "layers": [{"layer": "dense", "placement": "column", "before": "gather_batch"}, ...], "before_loss"}.
Json plan_to_json(const TrainSpec& spec, const ParallelPlan& plan);

}  // namespace magmadnn::run
