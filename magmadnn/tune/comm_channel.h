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
/// timeout. A rank that dies ends the job (mpirun stops every rank): the
/// journal then serves `--resume`.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "magmadnn/distributed/communicator.h"
#include "magmadnn/tune/channel.h"

namespace magmadnn::tune {

/// This rank's part in a search over `world` with groups of `ranks_per_trial`.
struct GroupLayout {
  int groups = 0;   ///< worker groups
  int group = -1;   ///< this rank's group (-1: the master)
  bool leader = false;
  std::shared_ptr<distributed::Communicator> comm;  ///< the group's communicator (null on the master)
};

/// Splits `world` into the master and its worker groups (collective over
/// `world`); ValueError naming the counts when they do not divide.
GroupLayout split_groups(distributed::Communicator& world, int ranks_per_trial);

class CommMasterChannel final : public MasterChannel {
 public:
  /// Rank 0 of `world`; its workers are the group leaders 1, 1+K, 1+2K, ...
  CommMasterChannel(std::shared_ptr<distributed::Communicator> world, int ranks_per_trial);
  ~CommMasterChannel() override;
  int workers() const override { return static_cast<int>(heads_.size()); }
  std::string describe(int worker) const override;
  void send(int worker, const std::string& message) override;
  std::vector<ChannelEvent> wait() override;
  /// Stops every group and waits for each leader's goodbye.
  void shut_down() override;

 private:
  int leader(int worker) const { return 1 + worker * k_; }
  void post(int worker);

  std::shared_ptr<distributed::Communicator> world_;
  int k_;
  std::vector<std::int64_t> sizes_;  // the length each posted receive fills
  std::vector<distributed::RequestPtr> heads_;
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
