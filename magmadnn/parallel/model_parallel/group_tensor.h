/// @file group_tensor.h
/// The tensor collectives the model-parallel ops need, over a group
/// given as a distributed::Communicator (all of its ranks form the group).
/// They move no block themselves: each views its tensors as dMath
/// distributed matrices and calls dMath (a split axis is a col_shards
/// layout, the whole tensor a replicated one: gathering is a
/// redistribution, summing a column reduction), so model parallelism and
/// the rest of dMath share one data-movement library.
///
/// Requires: every rank of the group calls the same function in the same
/// order with the same shapes except for the split axis (the communicator's
/// contract: a mismatch is raised as CommError, a missing rank by the
/// watchdog). The split axis is axis 1 of a tensor of two or more axes
/// {rows, n, inner...}: one index of it is a block of `unit` = prod(inner)
/// consecutive elements per row. A matrix's columns are the case unit = 1,
/// an NCHW tensor's channels the case unit = H * W (viewed as {N, C*H*W},
/// a channel split is a column split in blocks of H * W).
/// Guarantees: results are in the memory type of the input; device tensors
/// are staged through host memory (dMath's matrices live on the host).
/// Uneven shards travel padded to the longest one (dMath's allgather path).
#pragma once

#include <cstdint>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/core/shard.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::distributed::mp {

/// values[0..n) = their elementwise sum over the ranks, on every rank (the
/// same n on every rank). In place.
template <typename T>
void sum_over_group(Communicator& comm, T* values, std::int64_t n);

/// t = the elementwise sum of every rank's t, on every rank. In place.
template <typename T>
void allreduce_sum(Communicator& comm, Tensor<T>& t);

/// The {rows, n, inner...} tensor whose axis-1 indices shard_of(n, size, r)
/// are rank r's `local` ({rows, that extent, inner...}), on every rank.
template <typename T>
Tensor<T> allgather_axis1(Communicator& comm, const Tensor<T>& local, std::int64_t n);

/// Indices [s.offset, s.offset + s.extent) of axis 1 (with all of the
/// trailing axes), as a new tensor in the same memory. Local: no
/// communication.
template <typename T>
Tensor<T> take_axis1(const Tensor<T>& full, Shard s);

/// The matrix spellings: a 2-D tensor's columns (ShapeError for any other
/// number of axes).
template <typename T>
Tensor<T> allgather_columns(Communicator& comm, const Tensor<T>& local, std::int64_t cols);
template <typename T>
Tensor<T> take_columns(const Tensor<T>& full, Shard s);

/// Any axis: the tensor of shape `whole` whose indices shard_of(whole[axis],
/// size, r) of axis `axis` are rank r's `local` (the other axes whole), on
/// every rank. Viewed as {prod of the axes before, whole[axis], prod of the
/// axes after}, this is allgather_axis1 (axis 0: a concatenation of the
/// ranks' parts). ShapeError when `local` is not this rank's part of `whole`.
template <typename T>
Tensor<T> allgather_axis(Communicator& comm, const Tensor<T>& local, const Shape& whole, std::int64_t axis);
/// Indices [s.offset, s.offset + s.extent) of axis `axis` of `full` (the
/// other axes whole), as a new tensor in the same memory. Local.
template <typename T>
Tensor<T> take_axis(const Tensor<T>& full, std::int64_t axis, Shard s);

}  // namespace magmadnn::distributed::mp
