#include "magmadnn/tune/comm_channel.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include "magmadnn/comm/communicator_factory.h"

namespace magmadnn::tune {
namespace {

// Tags of the search's messages on the world communicator (training runs on
// the groups' own communicators, so nothing else uses these).
constexpr int kLengthTag = 7101;
constexpr int kBodyTag = 7102;
constexpr int kBeatTag = 7103;  // on the heartbeats' own communicator
// What a heartbeat carries; static, since a send abandoned at exit may still read it.
const std::int64_t kBeat = 1;

using Clock = std::chrono::steady_clock;

void send_message(distributed::Communicator& comm, int dest, const std::string& message) {
  const std::int64_t size = static_cast<std::int64_t>(message.size());
  comm.send(distributed::host_buffer(&size, 1), dest, kLengthTag);
  std::vector<std::int32_t> words((message.size() + 3) / 4, 0);
  std::memcpy(words.data(), message.data(), message.size());
  const std::vector<std::int32_t>& body = words;
  if (!body.empty()) comm.send(distributed::host_buffer(body.data(), body.size()), dest, kBodyTag);
}

std::string receive_body(distributed::Communicator& comm, int source, std::int64_t size) {
  std::vector<std::int32_t> words((static_cast<std::size_t>(size) + 3) / 4, 0);
  if (!words.empty()) comm.recv(distributed::host_buffer(words.data(), words.size()), source, kBodyTag);
  return std::string(reinterpret_cast<const char*>(words.data()), static_cast<std::size_t>(size));
}

// Polls `req` until it completes: test() never blocks nor trips the watchdog,
// so waiting here may last as long as a trial does.
void poll_until_done(distributed::Request& req) {
  auto nap = std::chrono::microseconds(20);
  while (!req.test()) {
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(1000));
  }
}

}  // namespace

GroupLayout split_groups(distributed::Communicator& world, int k) {
  const int workers = world.size() - 1;
  MAGMADNN_CHECK(k >= 1 && workers >= k && workers % k == 0, ValueError,
                 "tune: " << world.size() << " ranks are the master and " << workers
                          << " worker ranks, which groups of --ranks-per-trial " << k
                          << " do not divide (start 1 + a multiple of " << k << " ranks)");
  GroupLayout g;
  g.groups = workers / k;
  const int r = world.rank();
  g.group = r == 0 ? -1 : (r - 1) / k;
  g.leader = r > 0 && (r - 1) % k == 0;
  std::unique_ptr<distributed::Communicator> part = distributed::split_communicator(world, g.group, r);
  g.comm = std::move(part);
  // Every rank decides alike (one MPI library): the split is collective.
  // Independent of the world (not split from it): the heartbeat thread
  // drives it alone, never touching the world's state.
  if (distributed::concurrent_communicators(world)) g.beats = distributed::duplicate_communicator(world);
  return g;
}

std::chrono::milliseconds heartbeat_interval(std::chrono::milliseconds watchdog) {
  return std::clamp(watchdog / 10, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
}

Heartbeat::Heartbeat(std::shared_ptr<distributed::Communicator> beats, std::chrono::milliseconds interval)
    : beats_(std::move(beats)), interval_(interval) {
  if (beats_ && beats_->rank() != 0) thread_ = std::thread([this] { run(); });
}

Heartbeat::~Heartbeat() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Heartbeat::run() {
  distributed::RequestPtr pending;
  std::unique_lock<std::mutex> lock(mutex_);
  try {
    while (!stop_) {
      lock.unlock();
      if (pending && pending->test()) pending.reset();
      // One heartbeat in flight at a time: a master that stopped reading
      // (it is ending) is not flooded.
      if (!pending) pending = beats_->isend(distributed::host_buffer(&kBeat, 1), 0, kBeatTag);
      lock.lock();
      wake_.wait_for(lock, interval_, [this] { return stop_; });
    }
  } catch (const std::exception&) {
    // The master is gone or the communicator failed: nobody listens.
  }
  // A send the master never took (it ended first) is left to MPI.
  if (pending) {
    try {
      if (!pending->test()) (void)pending.release();
    } catch (...) {
      (void)pending.release();
    }
  }
}

CommMasterChannel::CommMasterChannel(std::shared_ptr<distributed::Communicator> world, int k,
                                     std::shared_ptr<distributed::Communicator> beats,
                                     std::chrono::milliseconds watchdog)
    : world_(std::move(world)), k_(k), beats_(std::move(beats)), watchdog_(watchdog) {
  MAGMADNN_CHECK(world_->rank() == 0, ValueError, "CommMasterChannel: the master is rank 0, not " << world_->rank());
  const int groups = (world_->size() - 1) / k_;
  sizes_.assign(static_cast<std::size_t>(groups), 0);
  heads_.resize(static_cast<std::size_t>(groups));
  lost_.assign(static_cast<std::size_t>(groups), false);
  done_.assign(static_cast<std::size_t>(groups), false);
  for (int w = 0; w < groups; ++w) post(w);
  if (beats_) {
    const auto n = static_cast<std::size_t>(world_->size());
    beat_in_.assign(n, 0);
    beat_req_.resize(n);
    last_beat_.assign(n, Clock::now());
    for (int r = 1; r < world_->size(); ++r) post_beat(r);
  }
}

void CommMasterChannel::post_beat(int r) {
  const auto u = static_cast<std::size_t>(r);
  beat_req_[u] = beats_->irecv(distributed::host_buffer(&beat_in_[u], 1), r, kBeatTag);
}

void CommMasterChannel::drop(distributed::RequestPtr& request) {
  if (!request) return;
  if (!request->cancel()) (void)request.release();  // MPI may still write it: never freed
  request.reset();
}

void CommMasterChannel::forget(int w) {
  lost_[static_cast<std::size_t>(w)] = true;
  drop(heads_[static_cast<std::size_t>(w)]);
  if (!beats_) return;
  for (int r = leader(w); r < leader(w) + k_; ++r) drop(beat_req_[static_cast<std::size_t>(r)]);
}

bool CommMasterChannel::lost_any() const {
  for (bool l : lost_)
    if (l) return true;
  return false;
}

void CommMasterChannel::watch(std::vector<ChannelEvent>& events) {
  if (!beats_) return;
  const auto now = Clock::now();
  // Every heartbeat already here first: a master busy elsewhere (a journal
  // commit, a report) finds them waiting, and judges no rank by its own delay.
  for (int r = 1; r < world_->size(); ++r) {
    auto& req = beat_req_[static_cast<std::size_t>(r)];
    while (req && req->test()) {
      req->wait();
      last_beat_[static_cast<std::size_t>(r)] = now;
      post_beat(r);
    }
  }
  for (int w = 0; w < workers(); ++w) {
    if (lost_[static_cast<std::size_t>(w)] || done_[static_cast<std::size_t>(w)]) continue;
    for (int r = leader(w); r < leader(w) + k_; ++r) {
      const auto silent = now - last_beat_[static_cast<std::size_t>(r)];
      if (silent < watchdog_) continue;
      std::ostringstream why;
      why << describe(w) << " is lost: rank " << r << " sent no heartbeat for "
          << std::chrono::duration_cast<std::chrono::milliseconds>(silent).count() / 1000.0
          << " s (watchdog " << watchdog_.count() / 1000.0 << " s; the rank died, or its node is unreachable)";
      forget(w);
      events.push_back({w, ChannelEvent::Kind::lost, why.str()});
      break;
    }
  }
}

void CommMasterChannel::take_messages(std::vector<ChannelEvent>& events, bool* said_bye) {
  for (int w = 0; w < workers(); ++w) {
    // Every message already here: a round of outcomes shares one journal commit.
    for (auto* head = &heads_[static_cast<std::size_t>(w)]; *head && (*head)->test();) {
      (*head)->wait();  // completed: runs its finishing steps
      const std::int64_t size = sizes_[static_cast<std::size_t>(w)];
      std::string body = receive_body(*world_, leader(w), size);
      if (said_bye != nullptr && body.find("\"bye\"") != std::string::npos) {
        done_[static_cast<std::size_t>(w)] = true;
        head->reset();
        *said_bye = true;
        break;
      }
      events.push_back({w, ChannelEvent::Kind::message, std::move(body)});
      post(w);
    }
  }
}

CommMasterChannel::~CommMasterChannel() {
  try {
    shut_down();
  } catch (...) {
    // Failing here means the job is ending anyway (a CommError was reported).
  }
}

void CommMasterChannel::post(int w) {
  heads_[static_cast<std::size_t>(w)] =
      world_->irecv(distributed::host_buffer(&sizes_[static_cast<std::size_t>(w)], 1), leader(w), kLengthTag);
}

std::string CommMasterChannel::describe(int w) const {
  const int first = leader(w);
  std::ostringstream os;
  os << "group " << w << " (rank";
  if (k_ > 1) os << "s " << first << "-" << first + k_ - 1 << ")";
  else os << " " << first << ")";
  return os.str();
}

void CommMasterChannel::send(int w, const std::string& message) {
  if (lost_[static_cast<std::size_t>(w)]) return;  // its loss has been reported
  send_message(*world_, leader(w), message);
}

std::vector<ChannelEvent> CommMasterChannel::wait() {
  auto nap = std::chrono::microseconds(20);
  for (;;) {
    std::vector<ChannelEvent> events;
    take_messages(events);
    watch(events);
    if (!events.empty()) return events;
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(1000));
  }
}

void CommMasterChannel::shut_down() {
  if (stopped_) return;
  stopped_ = true;
  for (int w = 0; w < workers(); ++w) send(w, R"({"type":"stop"})");
  // Every leader answers "bye" (worker.h); results still on their way come
  // first and are dropped. A group lost meanwhile is not waited for.
  auto nap = std::chrono::microseconds(20);
  for (;;) {
    bool open = false;
    for (int w = 0; w < workers(); ++w)
      open = open || (!lost_[static_cast<std::size_t>(w)] && !done_[static_cast<std::size_t>(w)]);
    if (!open) break;
    std::vector<ChannelEvent> ignored;
    bool bye = false;
    take_messages(ignored, &bye);
    watch(ignored);
    if (bye || !ignored.empty()) continue;
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(1000));
  }
  for (auto& req : beat_req_) drop(req);
}

std::optional<std::string> CommWorkerChannel::receive() {
  std::int64_t size = 0;
  auto req = world_->irecv(distributed::host_buffer(&size, 1), 0, kLengthTag);
  poll_until_done(*req);
  req->wait();
  return receive_body(*world_, 0, size);
}

void CommWorkerChannel::send(const std::string& message) { send_message(*world_, 0, message); }

}  // namespace magmadnn::tune
