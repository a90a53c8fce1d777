#include "magmadnn/comm/mpi/mpi_request.h"

#include <cstdio>
#include <sstream>
#include <thread>

#include "magmadnn/comm/mpi/mpi_check.h"

namespace magmadnn::distributed::mpi_detail {

using Clock = std::chrono::steady_clock;

namespace {
constexpr int kNoticeTag = 1;  // on coll_check, beside the descriptors' tag 0 (presence.h lists them all)
// How long the watchdog's failure path waits for the other ranks' answers.
constexpr std::chrono::milliseconds kPresenceBound{500};
}  // namespace

CommState::~CommState() {
  if (!MpiEnvironment::mpi_active()) return;
  if (notice != MPI_REQUEST_NULL) {
    MPI_Cancel(&notice);
    MPI_Wait(&notice, MPI_STATUS_IGNORE);
  }
  presence.stop();
  // A failed communicator's messages may still be on their way (a notice, a
  // descriptor of a collective that was abandoned). Freed, its context id
  // could go to a communicator created later, which would then receive
  // them (Open MPI keeps early messages for a context id not yet in use):
  // so a failed one (or one whose parent failed) is left allocated, a few
  // handles, for the rest of the job.
  if (!failure.empty() || (parent && !parent->failure.empty())) return;
  for (MPI_Comm* c : {&data, &coll_check, &p2p_check})
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
}

void CommState::check_usable(const char* what) {
  if (failure.empty()) failure = poll_notice();
  MAGMADNN_CHECK(failure.empty(), CommError,
                 "MpiCommunicator::" << what << " on rank " << rank
                                     << ": the communicator failed earlier and its ranks no longer agree on the "
                                        "order of calls; first failure: "
                                     << failure);
}

void CommState::post_notice_receive() {
  MAGMADNN_MPI_CHECK(MPI_Irecv(notice_in.data(), static_cast<int>(notice_in.size()), MPI_CHAR, MPI_ANY_SOURCE,
                               kNoticeTag, coll_check, &notice),
                     "MpiCommunicator: posting the receive of failure notices");
}

void CommState::send_notice(const std::string& message) noexcept {
  // Fire and forget: the text is deliberately leaked, since MPI may still
  // read it while the job is being torn down.
  auto* text = new std::string(message.substr(0, notice_in.size() - 1));
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    MPI_Request req = MPI_REQUEST_NULL;
    if (MPI_Isend(text->c_str(), static_cast<int>(text->size() + 1), MPI_CHAR, r, kNoticeTag, coll_check, &req) ==
        MPI_SUCCESS)
      MPI_Request_free(&req);
  }
}

std::string CommState::poll_notice() {
  if (notice != MPI_REQUEST_NULL) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Test(&notice, &flag, &status) == MPI_SUCCESS && flag) {
      notice_in.back() = '\0';
      return "rank " + std::to_string(status.MPI_SOURCE) + " reported: " + notice_in.data();
    }
  }
  if (!parent) return {};
  // Polling the parent consumes its one posted receive: what it hears is
  // recorded there, for the parent's own calls.
  if (parent->failure.empty()) parent->failure = parent->poll_notice();
  if (parent->failure.empty()) return {};
  return "the communicator this one was split from failed: " + parent->failure;
}

MpiRequest::MpiRequest(std::shared_ptr<CommState> state, std::string what, std::int64_t step,
                       std::chrono::milliseconds timeout)
    : state_(std::move(state)), what_(std::move(what)), step_(step), timeout_(timeout) {}

MpiRequest::MpiRequest(std::shared_ptr<CommState> state, const Descriptor& call, std::chrono::milliseconds timeout)
    : state_(std::move(state)), call_(call), collective_(true), step_(call.step), timeout_(timeout) {}

std::string MpiRequest::what() const { return collective_ ? describe_with_bytes(call_) : what_; }

MpiRequest::~MpiRequest() {
  if (done_ || !MpiEnvironment::mpi_active()) return;
  if (!failure_.empty()) {
    // Abandoned: a receive is cancelled and a send left to MPI; a collective
    // cannot be cancelled or freed, so its handle is dropped and the job is
    // expected to end.
    if (data_ != MPI_REQUEST_NULL && !collective_) {
      if (is_recv_) MPI_Cancel(&data_);
      MPI_Request_free(&data_);
    }
    if (header_ != MPI_REQUEST_NULL) {
      if (is_recv_) MPI_Cancel(&header_);
      MPI_Request_free(&header_);
    }
    return;
  }
  try {
    wait();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "magmadnn: a pending MPI request failed while being destroyed: %s\n", e.what());
  }
}

void MpiRequest::watch_peer(int peer, bool is_recv, const Descriptor& mine) {
  peer_ = peer;
  is_recv_ = is_recv;
  header_mine_ = mine;
  header_in_ = !is_recv;  // a sender expects no header back
}

void MpiRequest::check_header() const {
  if (header_theirs_.count == header_mine_.count && header_theirs_.type == header_mine_.type) return;
  MAGMADNN_THROW(CommError, "point-to-point mismatch at step " << step_ << ": rank " << state_->rank
                                << " receives " << header_mine_.count << " x "
                                << dtype_name(static_cast<dtype>(header_mine_.type)) << " from rank " << peer_
                                << " with tag " << header_mine_.seq << ", but rank " << peer_ << " sent "
                                << header_theirs_.count << " x " << dtype_name(static_cast<dtype>(header_theirs_.type))
                                << " (its step " << header_theirs_.step << ")");
}

bool MpiRequest::check_progress() {
  if (exchange_) return exchange_->test();
  if (hash_) return hash_->test();
  return true;
}

bool MpiRequest::progress() {
  bool checked = check_progress();
  // The vote first: a collective's data is tested (and completed) only once
  // every rank has agreed on it.
  if (hash_ && !checked) return false;
  if (header_ != MPI_REQUEST_NULL) {
    int flag = 0;
    MAGMADNN_MPI_CHECK(MPI_Test(&header_, &flag, MPI_STATUS_IGNORE),
                       what() << " with rank " << peer_ << ": exchanging the message header");
    if (flag && is_recv_) {
      header_in_ = true;
      check_header();
    }
  }
  checked = checked && header_in_ && header_ == MPI_REQUEST_NULL;
  if (!data_done_) {
    int flag = 0;
    MPI_Status status;
    const int rc = MPI_Test(&data_, &flag, &status);
    if (rc != MPI_SUCCESS) {
      // A header that disagrees explains the error better (a truncated receive).
      const auto until = Clock::now() + std::chrono::milliseconds(200);
      while (is_recv_ && !header_in_ && Clock::now() < until) {
        int hflag = 0;
        if (MPI_Test(&header_, &hflag, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
        if (hflag) {
          header_in_ = true;
          check_header();
        }
      }
      if (exchange_) exchange_->test();
      const std::string error = mpi_error_text(rc == MPI_ERR_IN_STATUS ? status.MPI_ERROR : rc);
      // Unchecked (mode off), a mismatch explains it better, if the ranks say so.
      if (collective_ && !exchange_ && !hash_) {
        const Presence::View view = state_->presence.ask(call_, kPresenceBound);
        if (!view.mismatch.empty())
          MAGMADNN_THROW(CommError, what() << " on rank " << state_->rank << " at step " << step_ << " failed: "
                                           << error << "; " << view.mismatch);
      }
      MAGMADNN_THROW(CommError, what() << " on rank " << state_->rank << " at step " << step_ << " failed: " << error);
    }
    data_done_ = flag != 0;
  }
  if (!(checked && data_done_)) return false;
  for (auto& f : finish_) f();
  finish_.clear();
  return done_ = true;
}

bool MpiRequest::test() {
  if (done_) return true;
  if (!failure_.empty()) MAGMADNN_THROW(CommError, failure_);
  try {
    return progress();
  } catch (const CommError& e) {
    fail(e.what());
  }
}

void MpiRequest::fail(const std::string& message, bool heard) {
  failure_ = message;
  if (state_->failure.empty()) {
    state_->failure = message;
    if (!heard) state_->send_notice(message);
  }
  throw CommError(message);
}

void MpiRequest::abandon(const std::string& notice) {
  std::ostringstream os;
  os << "watchdog on rank " << state_->rank << ": at step " << step_ << ", " << what() << " was abandoned because "
     << notice << " (here: " << missing_view(/*ask=*/false) << ")";
  fail(os.str(), /*heard=*/true);
}

void MpiRequest::time_out() {
  std::ostringstream os;
  os << "watchdog on rank " << state_->rank << ": at step " << step_ << ", " << what() << " did not complete within "
     << timeout_.count() << " ms; " << missing_view(/*ask=*/true);
  fail(os.str());
}

namespace {
std::string absent_text(const std::vector<int>& missing) {
  std::ostringstream os;
  if (missing.empty()) return "every rank reached it, but it did not finish (a rank may have died inside it)";
  os << (missing.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < missing.size(); ++i) os << (i ? ", " : "") << missing[i];
  os << (missing.size() == 1 ? " has" : " have") << " not reached it";
  return os.str();
}
}  // namespace

std::string MpiRequest::missing_view(bool ask) const {
  std::ostringstream os;
  if (exchange_) {
    os << absent_text(exchange_->missing());
  } else if (collective_) {
    if (hash_ && hash_->voted()) return absent_text({});
    if (!ask) return "not every rank has reached it";
    const Presence::View view = state_->presence.ask(call_, kPresenceBound);
    if (!view.mismatch.empty()) return view.mismatch;
    return absent_text(view.absent);
  } else if (is_recv_) {
    os << "rank " << peer_ << " has not sent it";
  } else {
    os << "rank " << peer_ << " has not received it";
  }
  return os.str();
}

bool MpiRequest::cancel() noexcept {
  if (done_) return true;
  if (!is_recv_ || collective_ || !MpiEnvironment::mpi_active()) return false;
  // Cancelled receives complete at once; one whose message had matched
  // completes when the message is in, which a live sender finishes soon.
  for (MPI_Request* r : {&header_, &data_})
    if (*r != MPI_REQUEST_NULL) MPI_Cancel(r);
  const auto until = Clock::now() + std::chrono::seconds(1);
  for (;;) {
    bool pending = false;
    for (MPI_Request* r : {&header_, &data_}) {
      int flag = 1;
      if (*r != MPI_REQUEST_NULL && MPI_Test(r, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) flag = 1;
      pending = pending || !flag;
    }
    if (!pending) break;
    if (Clock::now() > until) {
      // A message half in from a rank that died: MPI may still write the
      // buffers; the caller keeps (or leaks) the request, whose destructor
      // then frees the handles without waiting.
      failure_ = "cancelled";
      return false;
    }
  }
  finish_.clear();
  done_ = true;
  return true;
}

void MpiRequest::wait() {
  if (test()) return;
  poll([this] { return test(); });
}

void MpiRequest::wait_check() {
  const auto checked = [this] {
    if (!failure_.empty()) MAGMADNN_THROW(CommError, failure_);
    try {
      return check_progress();
    } catch (const CommError& e) {
      fail(e.what());
    }
  };
  if (checked()) return;
  poll(checked);
}

template <typename Done>
void MpiRequest::poll(Done done) {
  // Poll as MPI_Wait does (MPI progresses only inside MPI calls, so a nap
  // stalls the transfer): busy for the first second, which any healthy
  // collective of a training step fits in; after that a wait is already
  // unusual, and 1 ms naps leave the cores to the ranks still working.
  const auto start = Clock::now();
  const auto deadline = start + timeout_;
  for (unsigned polls = 1;; ++polls) {
    if (done()) return;
    // The first poll too: a request of a communicator that failed meanwhile
    // stops at once, however slowly a loaded machine turns 64 polls.
    if (polls % 64 != 0 && polls != 1) continue;
    if (!state_->failure.empty())  // another request of this communicator failed first
      abandon("an earlier operation on this communicator failed: " + state_->failure);
    // The MPI calls below (each MPI_Test runs MPI's progress engine, about
    // 0.1 us) wait for the 64th poll: most collectives of a step are done by then.
    if (polls == 1) continue;
    const std::string notice = state_->poll_notice();
    if (!notice.empty()) abandon(notice);
    state_->presence.answer();  // a rank whose watchdog fired asks who is here
    const auto now = Clock::now();
    if (now >= deadline) time_out();
    if (now - start > std::chrono::seconds(1)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace magmadnn::distributed::mpi_detail
