/// @file layer_state.h
/// broadcast_layer_state: rank `root`'s layer state (BatchNorm running
/// statistics) on every rank. Each rank's drifts apart during data-parallel
/// training, since each sees its own slice of every batch; strategies start
/// equal with it and runs share one rank's before validation, checkpoints
/// and test scores.
///
/// Requires: every rank calls it at the same point with the same root and a
/// network of the same architecture (a collective). Guarantees: on return
/// every state tensor equals root's; tensors in device memory travel
/// through a host copy; with one rank it returns at once.
#pragma once

#include "magmadnn/comm/communicator.h"
#include "magmadnn/model/neural_network.h"

namespace magmadnn::distributed {

template <typename T>
void broadcast_layer_state(Communicator& comm, model::NeuralNetwork<T>& net, int root = 0);

}  // namespace magmadnn::distributed
