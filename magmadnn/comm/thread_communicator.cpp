#include "magmadnn/comm/thread_communicator.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <sstream>

#include "magmadnn/core/half.h"

namespace magmadnn::distributed {

// One rank's side of a collective, posted where the others can read it
// between the two rendezvous of the call.
struct ThreadCommunicator::Call {
  const char* op = "";
  ReduceOp reduce = ReduceOp::sum;  // compared only where `reduces`
  bool reduces = false;
  int root = -1;
  dtype type = dtype::f32;
  std::size_t count = 0;  // what every rank must agree on
  const void* send = nullptr;
  void* recv = nullptr;
  std::function<void(const std::vector<Call*>&)> compute;  // this rank's result from every rank's call
};

class ThreadGroup {
 public:
  explicit ThreadGroup(int size)
      : size_(size), present_(static_cast<std::size_t>(size), 0), calls_(static_cast<std::size_t>(size)),
        mail_(static_cast<std::size_t>(size) * static_cast<std::size_t>(size)) {}
  int size() const noexcept { return size_; }

  struct Message {
    int tag;
    dtype type;
    std::vector<unsigned char> bytes;
  };

  /// Waits until every rank arrives; CommError on the watchdog's timeout or
  /// a failure of the group (recorded, so every rank stops). The last rank to
  /// arrive runs `check` (when given) under the lock, while every other rank
  /// still waits and so keeps its posted call alive: a non-empty answer fails
  /// the group. (Checking after the rendezvous let a rank that had already
  /// thrown free the call another rank was still printing.)
  void rendezvous(int rank, std::chrono::milliseconds timeout, const std::string& what,
                  const std::function<std::string()>& check = {}) {
    std::unique_lock lock(m_);
    throw_if_failed();
    const std::uint64_t generation = generation_;
    present_[static_cast<std::size_t>(rank)] = 1;
    if (++arrived_ == size_) {
      if (check) {
        if (std::string problem = check(); !problem.empty()) fail(problem);
      }
      arrived_ = 0;
      std::fill(present_.begin(), present_.end(), 0);
      ++generation_;
      cv_.notify_all();
      return;
    }
    const bool done = cv_.wait_for(lock, timeout, [&] { return generation_ != generation || !failure_.empty(); });
    if (generation_ != generation) return;
    if (!done) {
      std::ostringstream os;
      os << "ThreadCommunicator: rank " << rank << " waited " << timeout.count() << " ms for " << what
         << "; rank(s)";
      for (int r = 0; r < size_; ++r) {
        if (!present_[static_cast<std::size_t>(r)]) os << " " << r;
      }
      os << " never came (watchdog)";
      fail(os.str());
    }
    throw_if_failed();
  }

  void post(int rank, ThreadCommunicator::Call* call) { calls_[static_cast<std::size_t>(rank)] = call; }
  const std::vector<ThreadCommunicator::Call*>& calls() const noexcept { return calls_; }

  void send(int from, int to, Message msg) {
    std::lock_guard lock(m_);
    throw_if_failed();
    box(from, to).push_back(std::move(msg));
    cv_.notify_all();
  }
  /// The first message from `from` to `to` with `tag`, taken out; waits
  /// `timeout` at most when `wait`, else returns false when there is none.
  bool take(int from, int to, int tag, bool wait, std::chrono::milliseconds timeout, Message& out,
            const std::string& what) {
    std::unique_lock lock(m_);
    auto& q = box(from, to);
    const auto match = [&] { return std::find_if(q.begin(), q.end(), [&](const Message& m) { return m.tag == tag; }); };
    const auto ready = [&] { return match() != q.end() || !failure_.empty(); };
    if (!ready() && (!wait || !cv_.wait_for(lock, timeout, ready))) {
      if (!wait) return false;
      fail("ThreadCommunicator: rank " + std::to_string(to) + " waited " + std::to_string(timeout.count()) +
           " ms for " + what + "; rank " + std::to_string(from) + " never sent it (watchdog)");
    }
    const auto it = match();
    if (it == q.end()) throw_if_failed();
    out = std::move(*it);
    q.erase(it);
    return true;
  }

  /// Records the group's first failure (later ones are dropped) and throws it.
  [[noreturn]] void fail(const std::string& reason) {
    if (failure_.empty()) failure_ = reason;
    cv_.notify_all();
    MAGMADNN_THROW(CommError, failure_);
  }
  void fail_quietly(const std::string& reason) noexcept {
    std::lock_guard lock(m_);
    if (failure_.empty()) failure_ = reason;
    cv_.notify_all();
  }

 private:
  void throw_if_failed() const {
    if (!failure_.empty()) MAGMADNN_THROW(CommError, "ThreadCommunicator: the group has failed: " << failure_);
  }
  std::deque<Message>& box(int from, int to) { return mail_[static_cast<std::size_t>(from * size_ + to)]; }

  int size_;
  std::mutex m_;
  std::condition_variable cv_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  std::vector<char> present_;
  std::vector<ThreadCommunicator::Call*> calls_;
  std::vector<std::deque<Message>> mail_;  // [from * size + to]
  std::string failure_;
};

namespace {

class DoneRequest final : public Request {
 public:
  bool test() override { return true; }
  void wait() override {}
};

void check_host(Place p, const char* what) {
  MAGMADNN_CHECK(p == Place::host, NotSupportedError,
                 "ThreadCommunicator::" << what << ": device buffers need the MPI or NCCL communicator");
}

double load(const void* data, dtype t, std::size_t i) {
  switch (t) {
    case dtype::f32: return static_cast<const float*>(data)[i];
    case dtype::f64: return static_cast<const double*>(data)[i];
    case dtype::f16: return static_cast<float>(static_cast<const half*>(data)[i]);
    case dtype::bf16: return static_cast<float>(static_cast<const bfloat16*>(data)[i]);
    case dtype::i32: return static_cast<const std::int32_t*>(data)[i];
    case dtype::i64: return static_cast<double>(static_cast<const std::int64_t*>(data)[i]);
  }
  return 0.0;
}

void store(void* data, dtype t, std::size_t i, double v) {
  switch (t) {
    case dtype::f32: static_cast<float*>(data)[i] = static_cast<float>(v); break;
    case dtype::f64: static_cast<double*>(data)[i] = v; break;
    case dtype::f16: static_cast<half*>(data)[i] = half(v); break;
    case dtype::bf16: static_cast<bfloat16*>(data)[i] = bfloat16(v); break;
    case dtype::i32: static_cast<std::int32_t*>(data)[i] = static_cast<std::int32_t>(v); break;
    case dtype::i64: static_cast<std::int64_t*>(data)[i] = static_cast<std::int64_t>(v); break;
  }
}

// out[i] = op over ranks (in rank order) of rank r's send[offset + i].
// Integers are combined in int64 so large counts stay exact.
void reduce_into(const std::vector<ThreadCommunicator::Call*>& calls, std::size_t offset, std::size_t n, dtype t,
                 ReduceOp op, void* out) {
  const bool integer = t == dtype::i32 || t == dtype::i64;
  for (std::size_t i = 0; i < n; ++i) {
    double acc = 0.0;
    std::int64_t iacc = 0;
    for (std::size_t r = 0; r < calls.size(); ++r) {
      const double v = load(calls[r]->send, t, offset + i);
      const std::int64_t iv = t == dtype::i64 ? static_cast<const std::int64_t*>(calls[r]->send)[offset + i]
                                              : static_cast<std::int64_t>(v);
      if (r == 0 || op == ReduceOp::sum || op == ReduceOp::avg) {
        acc = r == 0 ? v : acc + v;
        iacc = r == 0 ? iv : iacc + iv;
      } else {
        acc = op == ReduceOp::max ? std::max(acc, v) : std::min(acc, v);
        iacc = op == ReduceOp::max ? std::max(iacc, iv) : std::min(iacc, iv);
      }
    }
    if (op == ReduceOp::avg) {
      acc /= static_cast<double>(calls.size());
      iacc /= static_cast<std::int64_t>(calls.size());
    }
    if (integer && t == dtype::i64) {
      static_cast<std::int64_t*>(out)[i] = iacc;
    } else {
      store(out, t, i, integer ? static_cast<double>(iacc) : acc);
    }
  }
}

std::string view_of(const ThreadCommunicator::Call& c, int rank) {
  std::ostringstream os;
  os << "rank " << rank << ": " << c.op << " of " << c.count << " " << dtype_name(c.type);
  if (c.reduces) os << " (" << reduce_op_name(c.reduce) << ")";
  if (c.root >= 0) os << " root " << c.root;
  return os.str();
}

bool same(const ThreadCommunicator::Call& a, const ThreadCommunicator::Call& b) {
  return std::strcmp(a.op, b.op) == 0 && a.type == b.type && a.count == b.count && a.root == b.root &&
         a.reduces == b.reduces && (!a.reduces || a.reduce == b.reduce);
}

// Empty when every rank posted the same collective with a root that exists;
// else the message naming both views.
std::string disagreement(const std::vector<ThreadCommunicator::Call*>& calls, std::int64_t step) {
  const auto n = static_cast<int>(calls.size());
  for (int r = 1; r < n; ++r) {
    if (!same(*calls[0], *calls[static_cast<std::size_t>(r)])) {
      return "ThreadCommunicator: ranks disagree on a collective at step " + std::to_string(step) + ": " +
             view_of(*calls[0], 0) + "; " + view_of(*calls[static_cast<std::size_t>(r)], r);
    }
  }
  if (calls[0]->root >= n) {
    return std::string("ThreadCommunicator::") + calls[0]->op + ": root " + std::to_string(calls[0]->root) +
           " does not exist (" + std::to_string(n) + " ranks)";
  }
  return {};
}

}  // namespace

ThreadCommunicator::ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank)
    : group_(std::move(group)), rank_(rank) {
  MAGMADNN_CHECK(group_ && rank >= 0 && rank < group_->size(), ValueError,
                 "ThreadCommunicator: rank " << rank << " of a group of " << (group_ ? group_->size() : 0));
}

ThreadCommunicator::~ThreadCommunicator() = default;

int ThreadCommunicator::size() const noexcept { return group_->size(); }

// Post, meet, check that every rank called the same thing, compute this
// rank's result from every rank's buffers, meet again (so no buffer is
// reused while another rank still reads it).
void ThreadCommunicator::collective(Call& call) {
  ++collectives_;
  const std::string what =
      std::string(call.op) + " (" + std::to_string(call.count * dtype_size(call.type)) + " bytes, step " +
      std::to_string(step_) + ")";
  group_->post(rank_, &call);
  const auto& calls = group_->calls();
  group_->rendezvous(rank_, timeout_, what, [&] { return disagreement(calls, step_); });
  if (call.compute) call.compute(calls);
  group_->rendezvous(rank_, timeout_, what + ", after the exchange");
}

RequestPtr ThreadCommunicator::iallreduce(Buffer buf, ReduceOp op) {
  check_host(buf.place, "iallreduce");
  // The other ranks read `buf` until the second rendezvous, so the result
  // goes to scratch and into `buf` once collective() has returned.
  std::vector<unsigned char> result(buf.bytes());
  Call c{"allreduce", op, true, -1, buf.type, buf.count, buf.data, nullptr,
         [&](const std::vector<Call*>& calls) { reduce_into(calls, 0, buf.count, buf.type, op, result.data()); }};
  collective(c);
  if (!result.empty()) std::memcpy(buf.data, result.data(), result.size());
  return std::make_unique<DoneRequest>();
}

RequestPtr ThreadCommunicator::ireduce(Buffer buf, ReduceOp op, int root) {
  check_host(buf.place, "ireduce");
  std::vector<unsigned char> result(rank_ == root ? buf.bytes() : 0);
  Call c{"reduce", op, true, root, buf.type, buf.count, buf.data, nullptr, [&](const std::vector<Call*>& calls) {
           if (rank_ == root) reduce_into(calls, 0, buf.count, buf.type, op, result.data());
         }};
  collective(c);
  if (!result.empty()) std::memcpy(buf.data, result.data(), result.size());
  return std::make_unique<DoneRequest>();
}

RequestPtr ThreadCommunicator::ibroadcast(Buffer buf, int root) {
  check_host(buf.place, "ibroadcast");
  Call c{"broadcast", ReduceOp::sum, false, root, buf.type, buf.count, buf.data, nullptr,
         [&](const std::vector<Call*>& calls) {
           if (rank_ != root && buf.count > 0) std::memcpy(buf.data, calls[static_cast<std::size_t>(root)]->send, buf.bytes());
         }};
  collective(c);
  return std::make_unique<DoneRequest>();
}

RequestPtr ThreadCommunicator::ireduce_scatter(ConstBuffer send, Buffer recv, ReduceOp op) {
  check_host(send.place, "ireduce_scatter");
  check_host(recv.place, "ireduce_scatter");
  MAGMADNN_CHECK(send.type == recv.type && send.count == recv.count * static_cast<std::size_t>(size()), CommError,
                 "ThreadCommunicator::ireduce_scatter: send " << send.count << " " << dtype_name(send.type)
                                                              << " for a receive of " << recv.count << " "
                                                              << dtype_name(recv.type) << " on " << size() << " ranks");
  Call c{"reduce_scatter", op, true, -1, recv.type, recv.count, send.data, recv.data,
         [&](const std::vector<Call*>& calls) {
           reduce_into(calls, static_cast<std::size_t>(rank_) * recv.count, recv.count, recv.type, op, recv.data);
         }};
  collective(c);
  return std::make_unique<DoneRequest>();
}

RequestPtr ThreadCommunicator::iallgather(ConstBuffer send, Buffer recv) {
  check_host(send.place, "iallgather");
  check_host(recv.place, "iallgather");
  MAGMADNN_CHECK(send.type == recv.type && recv.count == send.count * static_cast<std::size_t>(size()), CommError,
                 "ThreadCommunicator::iallgather: send " << send.count << " " << dtype_name(send.type)
                                                         << " into a receive of " << recv.count << " "
                                                         << dtype_name(recv.type) << " on " << size() << " ranks");
  Call c{"allgather", ReduceOp::sum, false, -1, send.type, send.count, send.data, recv.data,
         [&](const std::vector<Call*>& calls) {
           for (std::size_t r = 0; r < calls.size(); ++r) {
             std::memmove(static_cast<unsigned char*>(recv.data) + r * send.bytes(), calls[r]->send, send.bytes());
           }
         }};
  collective(c);
  return std::make_unique<DoneRequest>();
}

RequestPtr ThreadCommunicator::igather(ConstBuffer send, Buffer recv, int root) {
  check_host(send.place, "igather");
  MAGMADNN_CHECK(rank_ != root || (recv.type == send.type && recv.count == send.count * static_cast<std::size_t>(size())),
                 CommError, "ThreadCommunicator::igather: root's receive of " << recv.count << " for " << size()
                                                                               << " sends of " << send.count);
  Call c{"gather", ReduceOp::sum, false, root, send.type, send.count, send.data, recv.data,
         [&](const std::vector<Call*>& calls) {
           if (rank_ != root) return;
           for (std::size_t r = 0; r < calls.size(); ++r) {
             std::memcpy(static_cast<unsigned char*>(recv.data) + r * send.bytes(), calls[r]->send, send.bytes());
           }
         }};
  collective(c);
  return std::make_unique<DoneRequest>();
}

RequestPtr ThreadCommunicator::iscatter(ConstBuffer send, Buffer recv, int root) {
  check_host(recv.place, "iscatter");
  MAGMADNN_CHECK(rank_ != root || (recv.type == send.type && send.count == recv.count * static_cast<std::size_t>(size())),
                 CommError, "ThreadCommunicator::iscatter: root's send of " << send.count << " for " << size()
                                                                             << " receives of " << recv.count);
  Call c{"scatter", ReduceOp::sum, false, root, recv.type, recv.count, send.data, recv.data,
         [&](const std::vector<Call*>& calls) {
           const auto* from = static_cast<const unsigned char*>(calls[static_cast<std::size_t>(root)]->send);
           if (recv.count > 0) std::memcpy(recv.data, from + static_cast<std::size_t>(rank_) * recv.bytes(), recv.bytes());
         }};
  collective(c);
  return std::make_unique<DoneRequest>();
}

void ThreadCommunicator::barrier() {
  Call c{"barrier", ReduceOp::sum, false, -1, dtype::i32, 0, nullptr, nullptr, nullptr};
  collective(c);
}

namespace {

// A receive: matched at test() or wait() against the sender's mailbox.
class RecvRequest final : public Request {
 public:
  RecvRequest(std::shared_ptr<ThreadGroup> group, int from, int to, int tag, Buffer buf,
              std::chrono::milliseconds timeout)
      : group_(std::move(group)), from_(from), to_(to), tag_(tag), buf_(buf), timeout_(timeout) {}
  bool test() override { return done_ || finish(false); }
  void wait() override {
    if (!done_) finish(true);
  }

 private:
  bool finish(bool wait) {
    ThreadGroup::Message m;
    const std::string what = "recv from rank " + std::to_string(from_) + " with tag " + std::to_string(tag_) + " (" +
                             std::to_string(buf_.bytes()) + " bytes)";
    if (!group_->take(from_, to_, tag_, wait, timeout_, m, what)) return false;
    done_ = true;
    MAGMADNN_CHECK(m.type == buf_.type && m.bytes.size() == buf_.bytes(), CommError,
                   "ThreadCommunicator: rank " << from_ << " sent " << m.bytes.size() / dtype_size(m.type) << " "
                                               << dtype_name(m.type) << " with tag " << tag_ << ", rank " << to_
                                               << " receives " << buf_.count << " " << dtype_name(buf_.type));
    if (!m.bytes.empty()) std::memcpy(buf_.data, m.bytes.data(), m.bytes.size());
    return true;
  }
  std::shared_ptr<ThreadGroup> group_;
  int from_, to_, tag_;
  Buffer buf_;
  std::chrono::milliseconds timeout_;
  bool done_ = false;
};

}  // namespace

RequestPtr ThreadCommunicator::isend(ConstBuffer buf, int dest, int tag) {
  check_host(buf.place, "isend");
  MAGMADNN_CHECK(dest >= 0 && dest < size(), ValueError,
                 "ThreadCommunicator::isend: rank " << dest << " does not exist (" << size() << " ranks)");
  const auto* p = static_cast<const unsigned char*>(buf.data);
  group_->send(rank_, dest, {tag, buf.type, std::vector<unsigned char>(p, p + buf.bytes())});
  return std::make_unique<DoneRequest>();
}

RequestPtr ThreadCommunicator::irecv(Buffer buf, int source, int tag) {
  check_host(buf.place, "irecv");
  MAGMADNN_CHECK(source >= 0 && source < size(), ValueError,
                 "ThreadCommunicator::irecv: rank " << source << " does not exist (" << size() << " ranks)");
  return std::make_unique<RecvRequest>(group_, source, rank_, tag, buf, timeout_);
}

void ThreadCommunicator::report_failure(const std::string& reason) noexcept {
  group_->fail_quietly("rank " + std::to_string(rank_) + " stopped: " + reason);
}

std::vector<std::shared_ptr<ThreadCommunicator>> make_thread_group(int size) {
  MAGMADNN_CHECK(size >= 1, ValueError, "make_thread_group: " << size << " ranks (at least 1)");
  auto group = std::make_shared<ThreadGroup>(size);
  std::vector<std::shared_ptr<ThreadCommunicator>> comms;
  for (int r = 0; r < size; ++r) comms.push_back(std::make_shared<ThreadCommunicator>(group, r));
  return comms;
}

}  // namespace magmadnn::distributed
