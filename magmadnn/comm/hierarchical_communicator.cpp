#include "magmadnn/comm/hierarchical_communicator.h"

#include <cstdint>
#include <iostream>

#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/core/half.h"

#if defined(MAGMADNN_HAVE_MPI)
#include "magmadnn/comm/mpi/mpi_communicator.h"
#endif

namespace magmadnn::distributed {
namespace {

// The stages of one allreduce, in the order every rank issues them.
constexpr int kReduce = 0;     // to the host's leader, inside the host
constexpr int kLeaders = 1;    // allreduce among the leaders
constexpr int kBroadcast = 2;  // from the leader, inside the host
constexpr int kDone = 3;

template <typename T, typename Wide = T>
void divide(void* data, std::size_t count, int n) {
  T* p = static_cast<T*>(data);
  const Wide w = static_cast<Wide>(n);
  for (std::size_t i = 0; i < count; ++i) p[i] = T(static_cast<Wide>(p[i]) / w);
}

void divide_in_place(const Buffer& b, int n) {
  switch (b.type) {
    case dtype::f32: return divide<float>(b.data, b.count, n);
    case dtype::f64: return divide<double>(b.data, b.count, n);
    case dtype::i32: return divide<std::int32_t>(b.data, b.count, n);
    case dtype::i64: return divide<std::int64_t>(b.data, b.count, n);
    case dtype::f16: return divide<half, float>(b.data, b.count, n);
    case dtype::bf16: return divide<bfloat16, float>(b.data, b.count, n);
  }
}

// Whether starting a collective on `c` waits for every rank to start it
// (the MPI check mode `every`).
bool starts_block(const Communicator* c) {
#if defined(MAGMADNN_HAVE_MPI)
  if (const auto* mpi = dynamic_cast<const MpiCommunicator*>(c)) return mpi->collective_check() == CollectiveCheck::every;
#endif
  (void)c;
  return false;
}

}  // namespace

struct HierarchicalCommunicator::Op {
  Buffer buf;
  ReduceOp op = ReduceOp::sum;
  int stage = -1;      // the last stage started
  RequestPtr current;  // its request, until it completes
  bool divided = false;
  bool done = false;
};

class HierarchicalCommunicator::StagedRequest final : public Request {
 public:
  StagedRequest(HierarchicalCommunicator* owner, std::shared_ptr<Op> op) : owner_(owner), op_(std::move(op)) {}
  ~StagedRequest() override {
    if (op_->done) return;
    try {
      owner_->wait_for(*op_);
    } catch (const std::exception& e) {
      std::cerr << "magmadnn: a hierarchical allreduce destroyed while pending failed: " << e.what() << "\n";
    }
  }
  bool test() override {
    if (!op_->done) owner_->progress();
    return op_->done;
  }
  void wait() override { owner_->wait_for(*op_); }

 private:
  HierarchicalCommunicator* owner_;
  std::shared_ptr<Op> op_;
};

HierarchicalCommunicator::HierarchicalCommunicator(std::shared_ptr<Communicator> flat, HostLayout layout)
    : flat_(std::move(flat)), layout_(std::move(layout)) {
  MAGMADNN_CHECK(flat_ != nullptr, ValueError, "HierarchicalCommunicator: null communicator");
  MAGMADNN_CHECK(layout_.leader.size() == static_cast<std::size_t>(flat_->size()), ValueError,
                 "HierarchicalCommunicator: a layout of " << layout_.leader.size() << " ranks for a communicator of "
                                                          << flat_->size());
  timeout_ = flat_->timeout();
  step_ = flat_->step();
  const int me = flat_->rank();
  const int host = layout_.leader[static_cast<std::size_t>(me)];
  // Two communicators inside the host, so that reductions and broadcasts of
  // buckets in flight together are each issued in one order on every rank.
  reduce_ = split_communicator(*flat_, host, me);
  bcast_ = split_communicator(*flat_, host, me);
  leaders_ = split_communicator(*flat_, host == me ? 0 : -1, me);
  MAGMADNN_CHECK(reduce_->rank() == 0 || leaders_ == nullptr, ValueError,
                 "HierarchicalCommunicator: rank " << me << " leads its host but is not its lowest rank");
}

HierarchicalCommunicator::~HierarchicalCommunicator() = default;

Communicator& HierarchicalCommunicator::sync(Communicator& c) {
  c.set_step(step_);
  c.set_timeout(timeout_);
  return c;
}

bool HierarchicalCommunicator::applies(int stage) const noexcept {
  switch (stage) {
    case kReduce: return reduce_->size() > 1;
    case kLeaders: return leaders_ != nullptr && leaders_->size() > 1;
    case kBroadcast: return bcast_->size() > 1;
    default: return true;
  }
}

RequestPtr HierarchicalCommunicator::start(Op& op, int stage) {
  // avg: sums throughout, divided once on the leader (finish of advance()).
  const ReduceOp sum_op = op.op == ReduceOp::avg ? ReduceOp::sum : op.op;
  switch (stage) {
    case kReduce: return sync(*reduce_).ireduce(op.buf, sum_op, 0);
    case kLeaders: return sync(*leaders_).iallreduce(op.buf, sum_op);
    default: return sync(*bcast_).ibroadcast(op.buf, 0);
  }
}

void HierarchicalCommunicator::advance(Op& op, int previous_started) {
  while (!op.done) {
    if (op.current) {
      if (!op.current->test()) return;
      op.current.reset();
    }
    int next = op.stage + 1;
    while (next < kDone && !applies(next)) ++next;
    if (next >= kBroadcast && op.op == ReduceOp::avg && leader() && !op.divided) {
      divide_in_place(op.buf, flat_->size());
      op.divided = true;
    }
    if (next == kDone) {
      op.done = true;
      return;
    }
    // The allreduce issued before this one starts each stage first.
    if (next > previous_started) return;
    op.current = start(op, next);
    op.stage = next;
  }
}

void HierarchicalCommunicator::rethrow_failure() const {
  if (failed_) std::rethrow_exception(failed_);
}

void HierarchicalCommunicator::progress() {
  rethrow_failure();
  try {
    int previous = kDone;
    for (const auto& op : pending_) {
      advance(*op, previous);
      previous = op->done ? kDone : op->stage;
    }
  } catch (...) {
    failed_ = std::current_exception();
    throw;
  }
  while (!pending_.empty() && pending_.front()->done) pending_.pop_front();
}

void HierarchicalCommunicator::wait_for(const Op& op) {
  for (;;) {
    progress();
    if (op.done) return;
    // The oldest allreduce never waits for another: block in its stage,
    // under that communicator's watchdog.
    Op& first = *pending_.front();
    try {
      if (first.current) first.current->wait();
    } catch (...) {
      failed_ = std::current_exception();
      throw;
    }
  }
}

RequestPtr HierarchicalCommunicator::iallreduce(Buffer buf, ReduceOp op) {
  rethrow_failure();
  if (op == ReduceOp::avg && buf.place == Place::device) return sync(*flat_).iallreduce(buf, op);
  // Where a start waits for the other ranks' (check mode every), a rank
  // starting a broadcast of one bucket while another rank starts the
  // reduction of the next would wait for each other: one allreduce at a
  // time then, its stages in one order on every rank.
  if (starts_block(reduce_.get()) || starts_block(leaders_.get())) {
    while (!pending_.empty()) wait_for(*pending_.back());
  }
  auto entry = std::make_shared<Op>();
  entry->buf = buf;
  entry->op = op;
  pending_.push_back(entry);
  progress();
  return std::make_unique<StagedRequest>(this, std::move(entry));
}

}  // namespace magmadnn::distributed
