/// @file comm_channel.h
/// The search under mpirun: rank 0 is the master, and the other ranks form
/// worker groups of K consecutive ranks (--ranks-per-trial K; ranks 1..K are
/// group 0, and so on). Each group's first rank, its leader, exchanges
/// messages with the master by point-to-point calls of the world
/// Communicator (a length, then the bytes); the group trains each trial
/// data-parallel on its own communicator (split_groups).
///
/// Requires: size() - 1 is a positive multiple of K. Guarantees: no call
/// waits on the watchdog while idle (the master and the leaders poll their
/// receives with test()), so a trial may run longer than the communicator's
/// timeout.
///
/// A dead worker rank: where mpirun stops every rank when one dies (its
/// default), the journal serves `--resume`. Where it does not (Open MPI's
/// orte_abort_on_non_zero_status 0, or its successor's equivalent), the
/// master's watchdog notices: every worker rank sends a heartbeat to the
/// master from a thread of its own (Heartbeat) on a communicator of its own
/// (GroupLayout::beats), and a group one of whose ranks stays silent for
/// the watchdog's time is reported lost (ChannelEvent::lost), so the master
/// runs its trial elsewhere, as with local worker processes. This needs MPI
/// with MPI_THREAD_MULTIPLE (distributed::concurrent_communicators); with
/// less, there are no heartbeats and no watchdog.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <optional>
#include <string>
#include <vector>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/tune/channel.h"

namespace magmadnn::tune {

/// This rank's part in a search over `world` with groups of `ranks_per_trial`.
struct GroupLayout {
  int groups = 0;   ///< worker groups
  int group = -1;   ///< this rank's group (-1: the master)
  bool leader = false;
  std::shared_ptr<distributed::Communicator> comm;  ///< the group's communicator (null on the master)
  /// A duplicate of the world for heartbeats (every rank), or null when
  /// threads may not drive two communicators at once.
  std::shared_ptr<distributed::Communicator> beats;
};

/// Splits `world` into the master and its worker groups (collective over
/// `world`); ValueError naming the counts when they do not divide.
GroupLayout split_groups(distributed::Communicator& world, int ranks_per_trial);

/// A worker rank's heartbeats: a thread sending a small message to the
/// master (rank 0 of `beats`) every `interval` until destroyed. The thread
/// alone drives `beats`.
class Heartbeat {
 public:
  Heartbeat(std::shared_ptr<distributed::Communicator> beats, std::chrono::milliseconds interval);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  void run();
  std::shared_ptr<distributed::Communicator> beats_;
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

/// The interval of heartbeats for a master's `watchdog`: a tenth of it, at most a second.
std::chrono::milliseconds heartbeat_interval(std::chrono::milliseconds watchdog);

class CommMasterChannel final : public MasterChannel {
 public:
  /// Rank 0 of `world`; its workers are the group leaders 1, 1+K, 1+2K, ...
  /// With `beats` (GroupLayout::beats), a group one of whose ranks sends no
  /// heartbeat for `watchdog` is lost.
  CommMasterChannel(std::shared_ptr<distributed::Communicator> world, int ranks_per_trial,
                    std::shared_ptr<distributed::Communicator> beats = nullptr,
                    std::chrono::milliseconds watchdog = std::chrono::seconds(10));
  ~CommMasterChannel() override;
  int workers() const override { return static_cast<int>(heads_.size()); }
  std::string describe(int worker) const override;
  void send(int worker, const std::string& message) override;
  std::vector<ChannelEvent> wait() override;
  /// Stops every group and waits for each leader's goodbye (or its loss).
  void shut_down() override;
  /// Whether the watchdog reported a group lost.
  bool lost_any() const;

 private:
  int leader(int worker) const { return 1 + worker * k_; }
  void post(int worker);
  /// Messages ready from live groups (and reposts their receives).
  void take_messages(std::vector<ChannelEvent>& events, bool* said_bye = nullptr);
  /// Records heartbeats, then reports every live group gone silent.
  void watch(std::vector<ChannelEvent>& events);
  void post_beat(int rank);
  /// Stops listening to group `w` for good.
  void forget(int worker);
  /// Cancels a pending receive, or leaves it to MPI when it cannot be.
  static void drop(distributed::RequestPtr& request);

  std::shared_ptr<distributed::Communicator> world_;
  int k_;
  std::vector<std::int64_t> sizes_;  // the length each posted receive fills
  std::vector<distributed::RequestPtr> heads_;
  std::vector<bool> lost_, done_;  // per group: lost; said goodbye
  std::shared_ptr<distributed::Communicator> beats_;
  std::chrono::milliseconds watchdog_;
  std::vector<std::int64_t> beat_in_;  // per world rank
  std::vector<distributed::RequestPtr> beat_req_;
  std::vector<std::chrono::steady_clock::time_point> last_beat_;
  bool stopped_ = false;
};

class CommWorkerChannel final : public WorkerChannel {
 public:
  explicit CommWorkerChannel(std::shared_ptr<distributed::Communicator> world) : world_(std::move(world)) {}
  std::optional<std::string> receive() override;
  void send(const std::string& message) override;

 private:
  std::shared_ptr<distributed::Communicator> world_;
};

}  // namespace magmadnn::tune
