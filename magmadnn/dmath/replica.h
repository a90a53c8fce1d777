/// @file replica.h
/// Replica<T>: the whole of a distributed matrix on every rank of its group,
/// kept until the matrix changes (dMath §2.1: weights split over ranks for
/// the update, whole on every rank for the next forward pass, and "keep
/// what you've seen").
///
///   dmath::Replica<float> w_all(w);     // w: a DistMatrix split over ranks
///   ... update w's blocks, w.mark_changed() ...
///   w_all.start();                      // allgather posted, not waited for
///   ... other work of the forward pass ...
///   const float* W = w_all.get().data();   // finishes the copy; later
///                                          // get()s copy nothing until w changes
///
/// Synchronous (get) and asynchronous (start, then get or wait) copies. An
/// asynchronous copy snapshots the source's blocks when it starts, so the
/// source may be written while the copy is in flight; the copy then
/// carries the stamp of what it snapshotted, and the next get() sees that
/// the source moved on and copies again.
///
/// How: one allgather of every rank's local matrix, padded to the layout's
/// largest, unpacked into a rows x cols row-major vector. A source
/// replicated on every rank is copied locally.
///
/// Requires: the source outlives the replica; every rank of the group makes
/// the same calls in the same order, and marks the source changed at the
/// same points (dist_matrix.h, "Versions"), so that all ranks agree on when
/// a copy is due with no message about it.
/// Guarantees: get() returns exactly the source's elements as of its stamp
/// at the call; no communication when the stamp is the one copied last.
#pragma once

#include <cstdint>
#include <vector>

#include "magmadnn/dmath/dist_matrix.h"

namespace magmadnn::distributed::dmath {

template <typename T>
class Replica {
 public:
  explicit Replica(const DistMatrix<T>& source) : source_(&source) {}

  /// The whole matrix (rows x cols, row-major), current with the source.
  /// Collective when a copy is due or in flight; otherwise returns the kept
  /// copy with no communication.
  const std::vector<T>& get();
  /// Posts a copy of the source as it is now without waiting for it, unless
  /// the kept copy (or the one in flight) is already of this stamp.
  /// Collective when it posts.
  void start();
  /// Finishes a copy in flight (nothing if none).
  void wait();
  /// Whether the kept copy is of the source's current stamp (no copy in flight).
  bool current() const noexcept { return !pending_ && have_ && copied_stamp_ == source_->stamp(); }

  struct Stats {
    std::uint64_t copies = 0;  ///< copies made (each one allgather, or a local copy)
    std::uint64_t reuses = 0;  ///< get() calls served by the kept copy
  };
  Stats stats() const noexcept { return stats_; }

 private:
  const DistMatrix<T>* source_;
  std::vector<T> whole_;
  std::vector<T> send_, recv_;
  RequestPtr request_;
  bool pending_ = false, have_ = false;
  std::uint64_t copied_stamp_ = 0, pending_stamp_ = 0;
  Stats stats_;
};

extern template class Replica<float>;
extern template class Replica<double>;

}  // namespace magmadnn::distributed::dmath
