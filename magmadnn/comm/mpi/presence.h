/// @file presence.h
/// Which ranks have reached a collective: the watchdog's question, asked
/// only on its failure path (mpi_request.h), so that the normal path of a
/// collective sends nothing for it.
///
/// A rank whose collective #k has not completed within the timeout sends a
/// query ("collective #k?") to every other rank and waits at most a bound
/// (500 ms) for the answers. A rank answers while it waits in any operation
/// of the communicator (MpiRequest polls its queries with its failure
/// notices, at least every 64 polls), with the number of the last
/// collective it has started and its descriptor of #k when it has one.
/// So a rank that has not answered within the bound, or has not started #k,
/// is named as not having reached it; and a rank that answers with another
/// descriptor for #k is named as a mismatch, which lets even the check mode
/// `off` name the rank of a mismatched collective that hangs.
///
/// Cost: nothing while no rank times out (one posted receive per
/// communicator, tested where the failure notices are); on the failure path,
/// 2 (size - 1) messages of at most 56 bytes.
///
/// Tags on the check duplicate: 0 descriptors (collective_check.h), 1
/// failure notices (mpi_request.h), 2 and 3 here, kFirstVoteTag and up the
/// hash check's votes and diagnoses (hash_check.h).
#pragma once

#include <mpi.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "magmadnn/comm/mpi/collective_check.h"

namespace magmadnn::distributed::mpi_detail {

constexpr int kPresenceQueryTag = 2;
constexpr int kPresenceAnswerTag = 3;
constexpr int kFirstVoteTag = 4;

class Presence {
 public:
  Presence() = default;
  ~Presence() = default;
  /// Cancels the posted receive of queries (CommState's destructor calls it
  /// before freeing the communicator).
  void stop() noexcept;
  Presence(const Presence&) = delete;
  Presence& operator=(const Presence&) = delete;

  /// Posts the receive of queries on `comm` (a communicator's check duplicate).
  void start(MPI_Comm comm, int rank, int size);
  /// Notes a collective this rank has started (kept: the last 16).
  void record(const Descriptor& d) noexcept;
  /// Answers every query that has arrived. Never throws.
  void answer() noexcept;

  struct View {
    std::vector<int> absent;  // ranks that have not reached the collective, ascending
    std::string mismatch;     // mismatch_message for the first rank that calls another, or empty
  };
  /// Asks every other rank about `mine` (a collective this rank started),
  /// answering their queries meanwhile, for at most `bound`.
  View ask(const Descriptor& mine, std::chrono::milliseconds bound);

 private:
  struct Answer {
    std::int64_t asked = -1;    // the collective the query named
    std::int64_t reached = -1;  // the last collective the answering rank started
    Descriptor call;            // its descriptor of `asked` (call.seq == asked), or seq -1
  };
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  MPI_Request query_ = MPI_REQUEST_NULL;
  std::int64_t query_in_ = -1;
  std::int64_t reached_ = -1;
  std::array<Descriptor, 16> recent_{};
};

}  // namespace magmadnn::distributed::mpi_detail
