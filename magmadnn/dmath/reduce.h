/// @file reduce.h
/// Reductions of a distributed matrix along its rows, its columns or whole:
/// sums, maxima and minima, correct whatever the layout (a row may be split
/// over several ranks, a matrix may be replicated or live on a subgroup).
///
///   DistMatrix<float> s(comm, Layout::replicated(A.rows(), 1));
///   reduce_rows(A, ReduceOp::sum, s);        // s(i) = sum_j A(i, j)
///   reduce_cols(dY, ReduceOp::sum, db);      // a bias gradient, db 1 x cols
///   float m = reduce_all(A, ReduceOp::max);
///
/// How: each element is counted once, by its holder (by the first rank of
/// the group when replicated), into a partial result as long as the reduced
/// dimension; one allreduce over the group combines the partials (rows, or
/// cols, or 1 elements), and each rank keeps its part in the output's
/// layout. No communication when every rank already holds the whole input
/// (replicated on the whole group), or when every reduced line is whole on
/// its rank and the output is split like the input's other dimension
/// (row_block A into a row-split column vector, for example).
///
/// Requires: op is sum, max or min (ValueError for avg: divide a sum
/// instead); the output has the reduced shape (ShapeError); input and output
/// share one Communicator object (ValueError); every rank calls with the
/// same layouts and op.
/// Guarantees: max and min are exact; a sum adds the same terms as one
/// process, in an order that depends on the layout (float rounding only).
/// A reduction over zero elements gives the op's identity (0, -inf, +inf).
#pragma once

#include "magmadnn/comm/communicator.h"
#include "magmadnn/dmath/dist_matrix.h"

namespace magmadnn::distributed::dmath {

/// out(i, 0) = op over j of A(i, j); out is A.rows() x 1, in any layout.
template <typename T>
void reduce_rows(const DistMatrix<T>& A, ReduceOp op, DistMatrix<T>& out);

/// out(0, j) = op over i of A(i, j); out is 1 x A.cols(), in any layout.
template <typename T>
void reduce_cols(const DistMatrix<T>& A, ReduceOp op, DistMatrix<T>& out);

/// op over every element of A, the same value on every rank.
template <typename T>
T reduce_all(const DistMatrix<T>& A, ReduceOp op);

}  // namespace magmadnn::distributed::dmath
