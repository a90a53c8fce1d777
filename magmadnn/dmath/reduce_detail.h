/// @file reduce_detail.h
/// What reduce.cpp and softmax.cpp share: identities and combination of
/// the reduction ops, and which rank counts a replicated element. Internal
/// to dmath.
#pragma once

#include <algorithm>
#include <limits>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/dmath/layout.h"

namespace magmadnn::distributed::dmath::detail {

/// ValueError unless op is sum, max or min.
void check_reduce_op(const char* where, ReduceOp op);

/// Whether `rank` counts its local elements of a matrix laid out by `l` in a
/// reduction. Every holder of a split matrix does, and every rank of a matrix
/// replicated on the whole group (which then reduces alone, sending nothing);
/// of a matrix replicated on a subgroup, only the subgroup's first rank, so
/// that the allreduce counts each element once.
bool counts_here(const Layout& l, int rank) noexcept;

/// Whether every rank of the group holds the whole matrix (no communication
/// is ever needed to reduce it).
bool whole_everywhere(const Layout& l) noexcept;

template <typename T>
T identity(ReduceOp op) noexcept {
  if (op == ReduceOp::max) return -std::numeric_limits<T>::infinity();
  if (op == ReduceOp::min) return std::numeric_limits<T>::infinity();
  return T(0);
}

template <typename T>
T combine(ReduceOp op, T a, T b) noexcept {
  if (op == ReduceOp::max) return std::max(a, b);
  if (op == ReduceOp::min) return std::min(a, b);
  return a + b;
}

}  // namespace magmadnn::distributed::dmath::detail
