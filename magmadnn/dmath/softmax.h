/// @file softmax.h
/// Softmax over each row of a distributed matrix, Y(i, j) =
/// exp(X(i, j) - m_i) / sum_j' exp(X(i, j') - m_i) with m_i the row's
/// maximum, in any layout: in particular with the row split over ranks,
/// as are the logits of a classifier whose last layer's outputs (classes)
/// are split by columns over a model-parallel group.
///
/// How: computed in X's layout. When X's rows are split (a grid with more
/// than one column), the row maxima and then the row sums are each one
/// allreduce of rows elements over the group; otherwise nothing is sent.
/// The result is then remapped into Y's layout if it differs.
///
/// Requires: X and Y of one shape (ShapeError) on one Communicator object
/// (ValueError); every rank calls with the same layouts.
/// Guarantees: each row of Y sums to 1 up to rounding; subtracting the
/// row's maximum first keeps exp from overflowing for any finite X; equal
/// to the single-process softmax up to the order of the row sum. Y may be
/// X itself.
#pragma once

#include "magmadnn/dmath/dist_matrix.h"

namespace magmadnn::distributed::dmath {

template <typename T>
void softmax_rows(const DistMatrix<T>& X, DistMatrix<T>& Y);

}  // namespace magmadnn::distributed::dmath
