/// @file mpi_request.h
/// The state an MpiCommunicator shares with its requests, and MpiRequest:
/// one non-blocking MPI operation watched by the collective check
/// (hash_check.h, or collective_check.h in mode pairwise) and the watchdog
/// (presence.h names the ranks it waits for).
///
/// Guarantees: test() never blocks; wait() returns once the operation has
/// completed and its finishing steps (average division, copies back from
/// staging) have run, or throws CommError: on a descriptor mismatch, on an
/// MPI error, or when the operation is still incomplete timeout() after
/// wait() was entered, naming the step, the operation, the bytes and the
/// ranks that did not arrive (found on that failure path by presence.h,
/// within 500 ms more). After such a failure the communicator is
/// unusable (its ranks no longer agree on the order of calls): every later
/// call throws CommError quoting the first failure, and its other pending
/// requests fail at their next wait(). A request destroyed
/// while pending waits for it; a failed one is abandoned (MPI cannot cancel
/// a collective), since the application is expected to end the job
/// (distributed::abort_job) after reporting the error.
#pragma once

#include <mpi.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/comm/mpi/collective_check.h"
#include "magmadnn/comm/mpi/hash_check.h"
#include "magmadnn/comm/mpi/mpi_communicator.h"
#include "magmadnn/comm/mpi/mpi_environment.h"
#include "magmadnn/comm/mpi/presence.h"
#include "magmadnn/comm/mpi/staging.h"

namespace magmadnn::distributed::mpi_detail {

/// What an MpiCommunicator and its pending requests share; it outlives the
/// communicator while requests are pending.
struct CommState {
  std::shared_ptr<MpiEnvironment> env;
  MPI_Comm data = MPI_COMM_NULL;        // the collectives and messages themselves
  MPI_Comm coll_check = MPI_COMM_NULL;  // collective descriptors
  MPI_Comm p2p_check = MPI_COMM_NULL;   // point-to-point headers
  int rank = 0;
  int size = 1;
  int tag_ub = 32767;
  std::int64_t next_seq = 0;  // number of the next collective
  // The check mode (MpiCommunicator::set_collective_check).
  CollectiveCheck check = CollectiveCheck::overlap;
  // Answers the watchdog's queries of other ranks (on coll_check); started
  // by MpiCommunicator, idle in the NCCL communicator's state.
  Presence presence;
  std::uint32_t flight_comm = 0;  // this communicator in the flight recorder (flight_recorder.h)
  std::string failure;        // the first failure; empty while healthy
  std::shared_ptr<PinnedPool> pool = std::make_shared<PinnedPool>();  // staging of device buffers

  // Failure notices: a rank whose operation fails tells every other rank at
  // once, so that ranks still waiting (perhaps with a later deadline) stop
  // and report too, before the application ends the job.
  MPI_Request notice = MPI_REQUEST_NULL;  // the posted receive of the next notice
  std::array<char, 1024> notice_in{};
  // The state of the communicator this one was split from (MpiCommunicator::
  // split), or null. A failure there (this rank's, or one it hears of) ends
  // this communicator too: its ranks may be waiting here for a rank that
  // has stopped. A failure here is not passed up, so that a part (a
  // search's trial) can fail alone and the whole go on.
  std::shared_ptr<CommState> parent;

  ~CommState();  // frees the duplicates unless MPI is finalized or the communicator failed
  /// Throws CommError if an earlier operation failed, here or on a rank
  /// that sent its notice.
  void check_usable(const char* what);
  /// Posts the receive of a notice from any rank.
  void post_notice_receive();
  /// Sends `message` to every other rank, without waiting.
  void send_notice(const std::string& message) noexcept;
  /// A notice that has arrived ("rank 2 reported: ..."), or the failure of
  /// a communicator this one was split from (directly or not), or empty.
  std::string poll_notice();
};

class MpiRequest final : public Request {
 public:
  /// A point-to-point operation; `what` names it in messages ("isend of ...").
  MpiRequest(std::shared_ptr<CommState> state, std::string what, std::int64_t step, std::chrono::milliseconds timeout);
  /// A collective, named in messages by describe_with_bytes(call) (built
  /// only when a message needs it).
  MpiRequest(std::shared_ptr<CommState> state, const Descriptor& call, std::chrono::milliseconds timeout);
  ~MpiRequest() override;
  MpiRequest(const MpiRequest&) = delete;
  MpiRequest& operator=(const MpiRequest&) = delete;

  bool test() override;
  void wait() override;
  /// A receive: MPI_Cancel on its header and data (point to point only).
  bool cancel() noexcept override;

  // -- set up by MpiCommunicator while posting ---------------------------
  /// A collective checked by a descriptor exchange (mode pairwise; posted already).
  void watch_collective(std::unique_ptr<DescriptorExchange> exchange) { exchange_ = std::move(exchange); }
  /// A collective checked by the hash vote (modes overlap and every; posted
  /// already). Its data request is tested only once the vote has agreed.
  void watch_hash(std::unique_ptr<HashCheck> check) { hash_ = std::move(check); }
  /// Mode every: returns once every rank has voted and all agree, before the
  /// communicator posts the data operation; throws CommError as wait() does
  /// (a mismatch, a notice, the watchdog), and then nothing was posted.
  void wait_check();
  /// A point-to-point operation with `peer`; a receive also checks the
  /// sender's header against `mine` (count and dtype).
  void watch_peer(int peer, bool is_recv, const Descriptor& mine);
  /// The header message's request and buffers (posted by the communicator).
  MPI_Request* header_request() noexcept { return &header_; }
  Descriptor* header_mine() noexcept { return &header_mine_; }
  Descriptor* header_theirs() noexcept { return &header_theirs_; }
  /// The data operation's request slot.
  MPI_Request* data_request() noexcept { return &data_; }
  /// A step to run, in order, once the data has arrived (avg, copy back).
  void on_complete(std::function<void()> f) { finish_.push_back(std::move(f)); }

 private:
  bool progress();
  /// Progresses the collective's check; true once it agrees (or there is none).
  bool check_progress();
  /// The operation as messages name it.
  std::string what() const;
  void check_header() const;
  /// Records the failure, tells the other ranks (unless `heard` says this
  /// rank learnt it from one of them) and throws it as CommError.
  [[noreturn]] void fail(const std::string& message, bool heard = false);
  [[noreturn]] void time_out();
  [[noreturn]] void abandon(const std::string& notice);
  /// "rank 1 has not reached it", "rank 3 has not sent it", ... With `ask`
  /// (the watchdog's own timeout), a collective whose vote is incomplete
  /// asks the other ranks (presence.h, at most 500 ms), which may also
  /// find a mismatch; without, it says only what this rank knows.
  std::string missing_view(bool ask) const;
  /// Polls `done` as MPI_Wait would, under the watchdog and the notices.
  template <typename Done>
  void poll(Done done);

  std::shared_ptr<CommState> state_;
  std::string what_;  // point to point; a collective is named by call_
  Descriptor call_;
  bool collective_ = false;
  std::int64_t step_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<DescriptorExchange> exchange_;
  std::unique_ptr<HashCheck> hash_;
  int peer_ = -1;
  bool is_recv_ = false;
  bool header_in_ = true;  // false while a receive awaits its header
  MPI_Request header_ = MPI_REQUEST_NULL;
  Descriptor header_mine_;
  Descriptor header_theirs_;
  MPI_Request data_ = MPI_REQUEST_NULL;
  bool data_done_ = false;
  std::vector<std::function<void()>> finish_;
  bool done_ = false;
  std::string failure_;
};

}  // namespace magmadnn::distributed::mpi_detail
