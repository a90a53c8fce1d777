// ThreadCommunicator (tests only): N ranks as N threads of one process, so
// the training run across ranks is tested where MPI is absent. Only the
// calls the run makes exist: allreduce (sum, avg; f32, f64, i64) and
// broadcast, each complete when it returns. Reductions add the ranks in rank
// order, in double, so every rank gets the same bits.
#pragma once

#include <barrier>
#include <cstring>
#include <memory>
#include <vector>

#include "magmadnn/distributed/communicator.h"

namespace dtest {
using namespace magmadnn;
using namespace magmadnn::distributed;

class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), barrier_(size), slots_(static_cast<std::size_t>(size)) {}
  int size() const noexcept { return size_; }
  std::barrier<>& barrier() noexcept { return barrier_; }
  std::vector<void*>& slots() noexcept { return slots_; }

 private:
  int size_;
  std::barrier<> barrier_;
  std::vector<void*> slots_;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}
  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return group_->size(); }
  std::string backend() const override { return "threads"; }
  bool supports(Place p) const noexcept override { return p == Place::host; }

  RequestPtr iallreduce(Buffer buf, ReduceOp op) override {
    MAGMADNN_CHECK(op == ReduceOp::sum || op == ReduceOp::avg, NotSupportedError, "ThreadCommunicator: op");
    ++collectives_;
    std::vector<double> total(buf.count, 0.0);
    group_->slots()[static_cast<std::size_t>(rank_)] = buf.data;
    group_->barrier().arrive_and_wait();
    for (int r = 0; r < size(); ++r) add(group_->slots()[static_cast<std::size_t>(r)], buf, total);
    group_->barrier().arrive_and_wait();  // every rank has read every buffer
    const double div = op == ReduceOp::avg ? size() : 1.0;
    for (std::size_t i = 0; i < buf.count; ++i) store(buf, i, total[i] / div);
    return std::make_unique<Done>();
  }
  RequestPtr ibroadcast(Buffer buf, int root) override {
    ++collectives_;
    group_->slots()[static_cast<std::size_t>(rank_)] = buf.data;
    group_->barrier().arrive_and_wait();
    if (rank_ != root) std::memcpy(buf.data, group_->slots()[static_cast<std::size_t>(root)], buf.bytes());
    group_->barrier().arrive_and_wait();
    return std::make_unique<Done>();
  }
  RequestPtr ireduce_scatter(ConstBuffer, Buffer, ReduceOp) override { return no("reduce_scatter"); }
  RequestPtr iallgather(ConstBuffer, Buffer) override { return no("allgather"); }
  RequestPtr igather(ConstBuffer, Buffer, int) override { return no("gather"); }
  RequestPtr iscatter(ConstBuffer, Buffer, int) override { return no("scatter"); }
  RequestPtr ireduce(Buffer, ReduceOp, int) override { return no("reduce"); }
  RequestPtr isend(ConstBuffer, int, int) override { return no("send"); }
  RequestPtr irecv(Buffer, int, int) override { return no("recv"); }
  void barrier() override { group_->barrier().arrive_and_wait(); }

  /// Collectives this rank has made.
  int collectives() const noexcept { return collectives_; }

 private:
  struct Done final : Request {
    bool test() override { return true; }
    void wait() override {}
  };
  static RequestPtr no(const char* what) {
    MAGMADNN_THROW(NotSupportedError, "ThreadCommunicator: " << what << " is not needed by the tests");
  }
  static void add(const void* src, const Buffer& b, std::vector<double>& total) {
    for (std::size_t i = 0; i < b.count; ++i) {
      switch (b.type) {
        case dtype::f32: total[i] += static_cast<const float*>(src)[i]; break;
        case dtype::f64: total[i] += static_cast<const double*>(src)[i]; break;
        case dtype::i64: total[i] += static_cast<double>(static_cast<const std::int64_t*>(src)[i]); break;
        default: MAGMADNN_THROW(NotSupportedError, "ThreadCommunicator: dtype");
      }
    }
  }
  static void store(const Buffer& b, std::size_t i, double v) {
    switch (b.type) {
      case dtype::f32: static_cast<float*>(b.data)[i] = static_cast<float>(v); break;
      case dtype::f64: static_cast<double*>(b.data)[i] = v; break;
      case dtype::i64: static_cast<std::int64_t*>(b.data)[i] = static_cast<std::int64_t>(v); break;
      default: MAGMADNN_THROW(NotSupportedError, "ThreadCommunicator: dtype");
    }
  }

  std::shared_ptr<ThreadGroup> group_;
  int rank_;
  int collectives_ = 0;
};

}  // namespace dtest
