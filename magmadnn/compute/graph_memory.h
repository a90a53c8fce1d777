/// @file graph_memory.h
/// op::graph_memory: the memory a graph holds in its nodes' cached values,
/// for accounting a training step's peak against what it needs (the
/// activations backward reads, the parameters, their gradients and the
/// optimizer's state).
///
///   const op::GraphMemory m = op::graph_memory(network.loss().get());
///   // m.forward_values: bytes of activations kept for backward
///
/// Requires: the graph has been evaluated (an unevaluated node holds nothing).
/// Guarantees: each storage is counted once, however many nodes or views
/// share it (a flatten's view, a fused node's pass-through); the counts read
/// no tensor's contents and change nothing.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "magmadnn/compute/operation.h"

namespace magmadnn::op {

struct GraphMemory {
  /// Distinct storages of the outputs of nodes with inputs (the forward
  /// values a training step keeps until its backward pass has read them).
  std::size_t forward_values = 0;
  /// Distinct storages of the leaves' values: the variables (parameters)
  /// and the placeholders (the batch, the labels).
  std::size_t leaves = 0;
  std::size_t nodes = 0;        ///< nodes below the root, the root included
  std::size_t largest_value = 0;  ///< the largest single forward value
  /// forward_values split by the kind of the node that holds each storage.
  std::map<std::string, std::size_t> by_kind;
};

template <typename T>
GraphMemory graph_memory(Operation<T>* root);

}  // namespace magmadnn::op
