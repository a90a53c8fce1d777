/// @file mpi_request.h
/// The state an MpiCommunicator shares with its requests, and MpiRequest:
/// one non-blocking MPI operation watched by the descriptor check and the
/// watchdog (collective_check.h).
///
/// Guarantees: test() never blocks; wait() returns once the operation has
/// completed and its finishing steps (average division, copies back from
/// staging) have run, or throws CommError: on a descriptor mismatch, on an
/// MPI error, or when the operation is still incomplete timeout() after
/// wait() was entered, naming the step, the operation, the bytes and the
/// ranks that did not arrive. After such a failure the communicator is
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
#include "magmadnn/comm/mpi/mpi_environment.h"
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
  // Strict checks (MpiCommunicator::set_strict_checks): a collective's data
  // operation is posted only once every rank's descriptor agrees.
  bool strict = false;
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
  /// `what` names the operation in messages ("allreduce(1024 x f32, sum), 4096 bytes").
  MpiRequest(std::shared_ptr<CommState> state, std::string what, std::int64_t step, std::chrono::milliseconds timeout);
  ~MpiRequest() override;
  MpiRequest(const MpiRequest&) = delete;
  MpiRequest& operator=(const MpiRequest&) = delete;

  bool test() override;
  void wait() override;
  /// A receive: MPI_Cancel on its header and data (point to point only).
  bool cancel() noexcept override;

  // -- set up by MpiCommunicator while posting ---------------------------
  /// A collective: its descriptor exchange (posted already).
  void watch_collective(std::unique_ptr<DescriptorExchange> exchange) { exchange_ = std::move(exchange); }
  /// The strict check (CommState::strict): returns once every rank's
  /// descriptor has arrived and agrees with this rank's, before the
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
  void check_header() const;
  /// Records the failure, tells the other ranks (unless `heard` says this
  /// rank learnt it from one of them) and throws it as CommError.
  [[noreturn]] void fail(const std::string& message, bool heard = false);
  [[noreturn]] void time_out();
  [[noreturn]] void abandon(const std::string& notice);
  /// "rank 1 has not reached it", "rank 3 has not sent it", ...
  std::string missing_view() const;
  /// Polls `done` as MPI_Wait would, under the watchdog and the notices.
  template <typename Done>
  void poll(Done done);

  std::shared_ptr<CommState> state_;
  std::string what_;
  std::int64_t step_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<DescriptorExchange> exchange_;
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
