/// @file parallel_linear.h
/// Megatron-LM's two model-parallel linear maps, y = x W^T + b with
/// W {out, in} split over a group of P ranks, as compositions of linear
/// (compute/linalg.h) with the group ops (group_ops.h):
///
///  - column_parallel_linear: rank r holds rows shard_of(out, P, r) of W
///    (its output features) and the same rows of b. Forward: copy_to_group
///    (no communication), the local GEMM, and with gather_output an
///    allgather of the output columns. Backward: one allreduce of dx (and,
///    with gather_output, nothing for dy: each rank takes its columns).
///  - row_parallel_linear: rank r holds columns shard_of(in, P, r) of W (its
///    input features); b is whole on every rank. Forward: the local GEMM on
///    x's matching columns, one allreduce (sum) of the partial outputs, then
///    b added once. Backward: no collective: dx for this rank's columns is
///    the local GEMM's (with input_is_split false, an allgather rebuilds the
///    whole dx from the ranks' columns).
///
/// A column-parallel layer without gather_output followed by a row-parallel
/// one with input_is_split is the Megatron MLP: one allreduce forward (in
/// the row layer) and one backward (in the column layer), whatever lies
/// between them as long as it acts on each column on its own (an
/// elementwise activation).
///
/// Requires: w and b are this rank's slices as stated (a ShapeError names
/// the expected shape otherwise); every rank builds the same graph.
/// Guarantees: on one rank both are exactly linear(x, w, b).
#pragma once

#include "magmadnn/compute/compute.h"
#include "magmadnn/parallel/model_parallel/group_ops.h"

namespace magmadnn::distributed::mp {

/// x {batch, in} whole on every rank; w {shard of out, in}; b {shard of
/// out} or empty. Returns {batch, out} with gather_output (`out` the whole
/// width), else {batch, shard of out}.
template <typename T>
op::Expr<T> column_parallel_linear(const op::Expr<T>& x, const op::Expr<T>& w, const op::Expr<T>& b,
                                   GroupPtr group, std::int64_t out, bool gather_output);

/// x {batch, shard of in} with input_is_split, else {batch, in};
/// w {out, shard of in}; b {out} (whole) or empty. Returns {batch, out},
/// the same on every rank.
template <typename T>
op::Expr<T> row_parallel_linear(const op::Expr<T>& x, const op::Expr<T>& w, const op::Expr<T>& b, GroupPtr group,
                                bool input_is_split);

}  // namespace magmadnn::distributed::mp
