/// @file redistribute.h
/// Moving a distributed matrix from one Layout to another over the same
/// group (dMath §3.2's remapping): every element goes from a rank that holds
/// it in the source layout to every rank that holds it in the target.
///
/// How: every rank knows both layouts, so each computes on its own, with no
/// exchange of metadata, which runs of rows and columns it sends to and
/// receives from every other rank. Then one exchange: all receives are
/// posted, every outgoing piece is packed into one contiguous message per
/// destination (rows in increasing global order, each row's runs of columns
/// likewise) and sent without blocking, and the piece a rank keeps is copied
/// directly. No rank gathers the matrix. Special cases:
///  - equal layouts: a local copy;
///  - a replicated source: every rank takes its part from its own copy (no
///    communication);
///  - a target replicated on every rank from a split source: one allgather
///    of the local matrices, each padded to the largest (cheaper than P^2
///    messages).
///
/// The element type may change on the way (float <-> double, dMath §3.3's
/// precision change): messages carry the source type, and each element is
/// converted once, where it is unpacked.
///
/// Requires: `from` and `to` have the same shape and the same Communicator
/// object (ValueError otherwise); every rank of the group calls it, with the
/// same layouts. Point-to-point messages use tag kRedistributeTag.
/// Guarantees: `to` holds exactly the elements of `from` (bitwise when the
/// types agree, else each converted by static_cast); `from`
/// is unchanged. Communication failures raise CommError (the communicator's
/// watchdog bounds every wait).
#pragma once

#include "magmadnn/dmath/dist_matrix.h"

namespace magmadnn::distributed::dmath {

/// The tag of redistribute's point-to-point messages.
inline constexpr int kRedistributeTag = 0x6d00;

/// Writes `from`'s elements into `to`, laid out by `to`'s layout. Collective.
/// S and D are float or double.
template <typename S, typename D>
void redistribute(const DistMatrix<S>& from, DistMatrix<D>& to);

extern template void redistribute(const DistMatrix<float>&, DistMatrix<float>&);
extern template void redistribute(const DistMatrix<double>&, DistMatrix<double>&);
extern template void redistribute(const DistMatrix<float>&, DistMatrix<double>&);
extern template void redistribute(const DistMatrix<double>&, DistMatrix<float>&);

}  // namespace magmadnn::distributed::dmath
