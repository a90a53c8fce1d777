#include "magmadnn/comm/mpi/presence.h"

#include <memory>
#include <thread>

#include "magmadnn/comm/mpi/mpi_check.h"

namespace magmadnn::distributed::mpi_detail {

using Clock = std::chrono::steady_clock;

void Presence::stop() noexcept {
  if (query_ == MPI_REQUEST_NULL) return;
  MPI_Cancel(&query_);
  MPI_Wait(&query_, MPI_STATUS_IGNORE);
}

void Presence::start(MPI_Comm comm, int rank, int size) {
  comm_ = comm;
  rank_ = rank;
  size_ = size;
  if (size > 1)
    MAGMADNN_MPI_CHECK(MPI_Irecv(&query_in_, 1, MPI_INT64_T, MPI_ANY_SOURCE, kPresenceQueryTag, comm, &query_),
                       "MpiCommunicator: posting the receive of presence queries");
}

void Presence::record(const Descriptor& d) noexcept {
  reached_ = d.seq;
  recent_[static_cast<std::size_t>(d.seq) % recent_.size()] = d;
}

void Presence::answer() noexcept {
  while (query_ != MPI_REQUEST_NULL) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Test(&query_, &flag, &status) != MPI_SUCCESS || !flag) return;
    // Fire and forget, as the failure notices: the answer is leaked, since
    // MPI may still read it while the job is being torn down.
    auto* a = new Answer;
    a->asked = query_in_;
    a->reached = reached_;
    const Descriptor& kept = recent_[static_cast<std::size_t>(query_in_ < 0 ? 0 : query_in_) % recent_.size()];
    if (query_in_ >= 0 && kept.seq == query_in_) a->call = kept;
    else a->call.seq = -1;
    MPI_Request req = MPI_REQUEST_NULL;
    if (MPI_Isend(a, sizeof(Answer), MPI_BYTE, status.MPI_SOURCE, kPresenceAnswerTag, comm_, &req) == MPI_SUCCESS)
      MPI_Request_free(&req);
    if (MPI_Irecv(&query_in_, 1, MPI_INT64_T, MPI_ANY_SOURCE, kPresenceQueryTag, comm_, &query_) != MPI_SUCCESS)
      query_ = MPI_REQUEST_NULL;
  }
}

Presence::View Presence::ask(const Descriptor& mine, std::chrono::milliseconds bound) {
  // Heap-held and leaked when answers are still missing at the end: MPI may
  // write them later (the job is failing anyway).
  auto asked = std::make_unique<std::int64_t>(mine.seq);
  auto answers = std::make_unique<std::vector<Answer>>(static_cast<std::size_t>(size_));
  auto requests = std::make_unique<std::vector<MPI_Request>>(static_cast<std::size_t>(size_), MPI_REQUEST_NULL);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request send = MPI_REQUEST_NULL;
    if (MPI_Isend(asked.get(), 1, MPI_INT64_T, r, kPresenceQueryTag, comm_, &send) == MPI_SUCCESS)
      MPI_Request_free(&send);
    MPI_Irecv(&(*answers)[static_cast<std::size_t>(r)], sizeof(Answer), MPI_BYTE, r, kPresenceAnswerTag, comm_,
              &(*requests)[static_cast<std::size_t>(r)]);
  }
  const auto deadline = Clock::now() + bound;
  for (;;) {
    answer();  // the ranks asking this one at the same time wait for it too
    bool pending = false;
    for (MPI_Request& q : *requests) {  // MPI_Test sets a completed request to MPI_REQUEST_NULL
      int flag = 1;
      if (q != MPI_REQUEST_NULL && MPI_Test(&q, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) flag = 0;
      pending = pending || !flag;
    }
    if (!pending || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  View view;
  bool pending = false;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request& q = (*requests)[static_cast<std::size_t>(r)];
    const Answer& a = (*answers)[static_cast<std::size_t>(r)];
    if (q != MPI_REQUEST_NULL) {
      MPI_Cancel(&q);
      MPI_Request_free(&q);
      pending = true;
      view.absent.push_back(r);
    } else if (a.asked != mine.seq || a.reached < mine.seq) {
      view.absent.push_back(r);
    } else if (view.mismatch.empty() && a.call.seq == mine.seq && !same_call(mine, a.call)) {
      view.mismatch = mismatch_message(mine, rank_, a.call, r);
    }
  }
  (void)asked.release();  // the queries are sent without waiting
  if (pending) {
    (void)answers.release();
    (void)requests.release();
  }
  return view;
}

}  // namespace magmadnn::distributed::mpi_detail
