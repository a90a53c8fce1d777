/// @file whole_network.h
/// A pipeline's stages and the one-process network of the same layers
/// (model::NeuralNetwork, e.g. build_network's for the same config), kept
/// equal where a run needs it: at an epoch's end every rank's network takes
/// the trained weights, optimizer state and layer state of every stage
/// (so that callbacks, predictions and checkpoints see the whole trained
/// network, and a checkpoint is the one-process network's, under its
/// names); when resuming, each stage takes its part of a loaded network.
///
/// Requires: the network's parameters and layer state are, in order, the
/// pipeline factories' layers' weights and state (as build_network's
/// network and pipeline_factories of one config are; ValueError naming the
/// counts otherwise), and its optimizer is of the pipeline optimizer's kind.
/// Guarantees: gather_whole is a collective of the pipeline's ranks (one
/// broadcast per tensor, from the stage holding it) after which every
/// rank's network holds the same values; take_from_whole is local.
#pragma once

#include "magmadnn/model/neural_network.h"
#include "magmadnn/parallel/pipeline/pipeline.h"

namespace magmadnn::distributed::pipeline {

/// Every stage's weights, optimizer slots and step count, and layer state
/// into `net` on every rank.
template <typename T>
void gather_whole(Pipeline<T>& pipe, model::NeuralNetwork<T>& net);

/// This rank's stage takes its weights, optimizer slots and step count, and
/// layer state from `net`.
template <typename T>
void take_from_whole(Pipeline<T>& pipe, model::NeuralNetwork<T>& net);

}  // namespace magmadnn::distributed::pipeline
