#include "magmadnn/tune/comm_channel.h"

#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include "magmadnn/distributed/communicator_factory.h"

namespace magmadnn::tune {
namespace {

// Tags of the search's messages on the world communicator (training runs on
// the groups' own communicators, so nothing else uses these).
constexpr int kLengthTag = 7101;
constexpr int kBodyTag = 7102;

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
  return g;
}

CommMasterChannel::CommMasterChannel(std::shared_ptr<distributed::Communicator> world, int k)
    : world_(std::move(world)), k_(k) {
  MAGMADNN_CHECK(world_->rank() == 0, ValueError, "CommMasterChannel: the master is rank 0, not " << world_->rank());
  const int groups = (world_->size() - 1) / k_;
  sizes_.assign(static_cast<std::size_t>(groups), 0);
  heads_.resize(static_cast<std::size_t>(groups));
  for (int w = 0; w < groups; ++w) post(w);
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

void CommMasterChannel::send(int w, const std::string& message) { send_message(*world_, leader(w), message); }

std::vector<ChannelEvent> CommMasterChannel::wait() {
  auto nap = std::chrono::microseconds(20);
  for (;;) {
    std::vector<ChannelEvent> events;
    for (int w = 0; w < workers(); ++w) {
      // Every message already here: a round of outcomes shares one journal commit.
      for (auto* head = &heads_[static_cast<std::size_t>(w)]; *head && (*head)->test();) {
        (*head)->wait();  // completed: runs its finishing steps
        const std::int64_t size = sizes_[static_cast<std::size_t>(w)];
        events.push_back({w, ChannelEvent::Kind::message, receive_body(*world_, leader(w), size)});
        post(w);
      }
    }
    if (!events.empty()) return events;
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(1000));
  }
}

void CommMasterChannel::shut_down() {
  if (stopped_) return;
  stopped_ = true;
  for (int w = 0; w < workers(); ++w) send(w, R"({"type":"stop"})");
  // Every leader answers "bye" (worker.h); results still on their way come first.
  for (int w = 0; w < workers(); ++w) {
    for (;;) {
      auto& head = heads_[static_cast<std::size_t>(w)];
      poll_until_done(*head);
      head->wait();
      const std::string m = receive_body(*world_, leader(w), sizes_[static_cast<std::size_t>(w)]);
      if (m.find("\"bye\"") != std::string::npos) {
        head.reset();
        break;
      }
      post(w);
    }
  }
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
