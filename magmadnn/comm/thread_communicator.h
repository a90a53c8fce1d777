/// @file thread_communicator.h
/// ThreadCommunicator: N ranks as N threads of one process. Code written
/// for N ranks (a training run across ranks, a model-parallel layer, a
/// strategy) runs and is tested where MPI is absent, and a split
/// computation can be checked against one process inside one test.
///
///   auto comms = distributed::make_thread_group(4);   // one per rank
///   std::vector<std::thread> ranks;
///   for (int r = 0; r < 4; ++r) ranks.emplace_back([&, r] { train_on(comms[r]); });
///
/// Requires: host buffers (device buffers raise NotSupportedError); rank r's
/// communicator is used by one thread at a time. Guarantees:
///  - every operation of communicator.h: the collectives (sum, avg, max and
///    min over f32, f64, f16, bf16, i32 and i64) and tagged point-to-point
///    messages; a collective is complete when its call returns, a send is
///    buffered (complete at once), a receive completes at wait();
///  - reductions add the ranks in rank order, in double (in int64 for
///    integers), so every rank gets the same bits whatever the timing;
///  - a collective whose operation, count, dtype or root differs between
///    ranks raises CommError on every rank, naming both views;
///  - the watchdog: a rank missing from a collective, or a receive whose
///    send never comes, for timeout() raises CommError naming the step, the
///    operation, the bytes and the missing ranks; after any failure (or
///    report_failure) every later call on any rank of the group throws.
#pragma once

#include <memory>
#include <vector>

#include "magmadnn/comm/communicator.h"

namespace magmadnn::distributed {

class ThreadGroup;  // the group's shared state (thread_communicator.cpp)

class ThreadCommunicator final : public Communicator {
 public:
  /// Rank `rank` of `group`; make_thread_group makes all of them.
  ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank);
  ~ThreadCommunicator() override;

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override;
  std::string backend() const override { return "threads"; }
  bool supports(Place place) const noexcept override { return place == Place::host; }

  RequestPtr iallreduce(Buffer buf, ReduceOp op) override;
  RequestPtr ibroadcast(Buffer buf, int root) override;
  RequestPtr ireduce_scatter(ConstBuffer send, Buffer recv, ReduceOp op) override;
  RequestPtr iallgather(ConstBuffer send, Buffer recv) override;
  RequestPtr igather(ConstBuffer send, Buffer recv, int root) override;
  RequestPtr iscatter(ConstBuffer send, Buffer recv, int root) override;
  RequestPtr ireduce(Buffer buf, ReduceOp op, int root) override;
  RequestPtr isend(ConstBuffer buf, int dest, int tag) override;
  RequestPtr irecv(Buffer buf, int source, int tag) override;
  void barrier() override;
  void report_failure(const std::string& reason) noexcept override;

  /// Collectives this rank has made (barriers included).
  int collectives() const noexcept { return collectives_; }

  struct Call;  ///< one rank's side of a collective (thread_communicator.cpp)

 private:
  void collective(Call& call);

  std::shared_ptr<ThreadGroup> group_;
  int rank_;
  int collectives_ = 0;
};

/// The `size` communicators of one new group, rank r at index r.
/// ValueError unless 1 <= size.
std::vector<std::shared_ptr<ThreadCommunicator>> make_thread_group(int size);

}  // namespace magmadnn::distributed
