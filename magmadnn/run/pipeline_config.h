/// @file pipeline_config.h
/// A config's `"parallel": {"pipeline": {...}}` (spec.h PipelineSpec) made
/// into a pipeline (parallel/pipeline/pipeline.h): the checks that need the
/// config alone (parse_config calls them), the config's layers as the
/// pipeline's units (one per entry of `layers`, so a cut falls only between
/// config layers), and the plan as summary.json records it. docs/hybrid.md,
/// "Pipelines".
///
/// Guarantees: check_pipeline_config refuses, with a ConfigError naming the
/// key, a pipeline with more stages than layers, micro-batches that do not
/// divide batch_size, cuts that are not one increasing first layer per
/// stage from 0, a cut inside a branch (a layer of a later stage reading a
/// layer other than the last of the stage before: a residual connection
/// built of add and inputs), fewer places to cut than the stages need,
/// dropout layers, model-parallel layers (distributed.parallel other than
/// data) and batch growth. Whether the ranks match the stages is checked
/// when the run starts (run_training.h), before training.
#pragma once

#include <cstdint>
#include <vector>

#include "magmadnn/parallel/pipeline/pipeline.h"
#include "magmadnn/run/spec.h"

namespace magmadnn::run {

/// The refusals above (a spec without a pipeline passes).
void check_pipeline_config(const TrainSpec& spec);

/// The layers each config layer reads (-1: the network's input).
std::vector<std::vector<int>> layer_reads(const TrainSpec& spec);

/// One factory per config layer: it builds that layer's kind (and its
/// activation) as a pipeline::Unit on its input, drawing the same weights
/// as build_network, layer by layer. A layer that reads several earlier
/// layers finds them among those built before it in the same pass.
std::vector<distributed::pipeline::LayerFactory<float>> pipeline_factories(const TrainSpec& spec);

/// The options of the spec's pipeline (cuts as given, or empty: balanced
/// within the network's cut points).
distributed::pipeline::PipelineOptions pipeline_options(const TrainSpec& spec);

/// The plan as summary.json's "pipeline" records it: stages, micro-batches,
/// schedule, how the cuts were chosen, and per stage its layers (indices
/// and types), parameters and weight bytes.
Json pipeline_plan_json(const TrainSpec& spec, const distributed::pipeline::Pipeline<float>& pipe);

/// The plan as lines of text, for the run's log.
std::string pipeline_plan_text(const Json& plan);

}  // namespace magmadnn::run
