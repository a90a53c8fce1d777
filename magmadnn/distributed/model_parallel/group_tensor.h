/// @file group_tensor.h
/// The three tensor collectives the model-parallel ops need, over a group
/// given as a distributed::Communicator (all of its ranks form the group).
///
/// Requires: every rank of the group calls the same function in the same
/// order with the same shapes except for the split axis (the communicator's
/// contract: a mismatch is raised as CommError, a missing rank by the
/// watchdog). Tensors are 2-D {rows, cols} where columns are split.
/// Guarantees: results are in the memory type of the input; device tensors
/// go to the communicator as device buffers when it takes them, else they
/// are staged through host memory.
#pragma once

#include <cstdint>

#include "magmadnn/distributed/communicator.h"
#include "magmadnn/distributed/model_parallel/shard.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::distributed::mp {

/// t = the elementwise sum of every rank's t, on every rank. In place.
template <typename T>
void allreduce_sum(Communicator& comm, Tensor<T>& t);

/// The {rows, cols} matrix whose columns shard_of(cols, size, r) are rank r's
/// `local` ({rows, that extent}), on every rank. Uneven shards travel padded
/// to the longest one, since the communicator's allgather moves equal counts.
template <typename T>
Tensor<T> allgather_columns(Communicator& comm, const Tensor<T>& local, std::int64_t cols);

/// Columns [s.offset, s.offset + s.extent) of a 2-D tensor, as a new tensor
/// in the same memory. Local: no communication.
template <typename T>
Tensor<T> take_columns(const Tensor<T>& full, Shard s);

}  // namespace magmadnn::distributed::mp
