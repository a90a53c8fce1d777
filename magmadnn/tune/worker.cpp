#include "magmadnn/tune/worker.h"

#include <chrono>
#include <cstring>
#include <vector>

#include "magmadnn/comm/communicator_factory.h"

namespace magmadnn::tune {
namespace {

using Clock = std::chrono::steady_clock;

// Members wait for the leader's next message as long as the search lasts:
// the watchdog applies to training, not to an idle group.
constexpr std::chrono::hours kIdleTimeout{24 * 365};

// The leader's message to every rank of the group: its length, then its bytes
// carried in int32 words (the communicator's smallest integer type).
std::string broadcast_message(distributed::Communicator& group, std::string message) {
  const auto saved = group.timeout();
  group.set_timeout(std::chrono::duration_cast<std::chrono::milliseconds>(kIdleTimeout));
  std::int64_t size = static_cast<std::int64_t>(message.size());
  group.broadcast(distributed::host_buffer(&size, 1), 0);
  std::vector<std::int32_t> words((static_cast<std::size_t>(size) + 3) / 4, 0);
  if (group.rank() == 0) std::memcpy(words.data(), message.data(), message.size());
  if (!words.empty()) group.broadcast(distributed::host_buffer(words.data(), words.size()), 0);
  group.set_timeout(saved);
  message.assign(reinterpret_cast<const char*>(words.data()), static_cast<std::size_t>(size));
  return message;
}

}  // namespace

std::string trial_message(const Trial& trial) { return Json{{"type", "trial"}, {"trial", trial.to_json()}}.dump(); }

std::string stop_message() { return R"({"type":"stop"})"; }

std::string answer_trial(const Json& message, const TrialFunction& fn,
                         const std::shared_ptr<distributed::Communicator>& group) {
  const Trial trial = Trial::from_json(message.at("trial"));
  // A trial that fails on a rank of a group (a NaN loss, a throwing
  // callback) leaves its communicator unusable on every rank of the group
  // (Communicator::report_failure), and the group's own must stay healthy
  // to receive the next trial: each trial runs on a communicator split from
  // the group's (a failure does not flow up to it, split's guarantee).
  std::shared_ptr<distributed::Communicator> comm = group;
  if (group && group->size() > 1) comm = distributed::split_communicator(*group, 0, group->rank());
  TrialOutcome outcome;
  const auto t0 = Clock::now();
  try {
    outcome = fn(trial, comm);
  } catch (const std::exception& e) {
    outcome = {};
    outcome.ok = false;
    outcome.error = e.what();
  }
  if (outcome.seconds < 0) outcome.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return Json{{"type", "result"}, {"trial", trial.index}, {"attempt", trial.attempt}, {"outcome", outcome.to_json()}}
      .dump();
}

void serve(WorkerChannel& channel, const TrialFunction& fn, const std::shared_ptr<distributed::Communicator>& group,
           const ServeHooks& hooks) {
  const bool lead_group = group && group->size() > 1;
  for (;;) {
    std::optional<std::string> text = channel.receive();
    if (!text) text = stop_message();  // the master is gone: end, and the group with us
    if (lead_group) text = broadcast_message(*group, *text);
    const Json message = Json::parse(*text);
    if (message.at("type") == "stop") {
      try {
        channel.send(R"({"type":"bye"})");
      } catch (const std::exception&) {
        // The master left first; nobody waits for the goodbye.
      }
      return;
    }
    channel.send(answer_trial(message, fn, group));
    if (hooks.after_result) hooks.after_result(Trial::from_json(message["trial"]));
  }
}

void serve_group_member(const std::shared_ptr<distributed::Communicator>& group, const TrialFunction& fn) {
  for (;;) {
    const Json message = Json::parse(broadcast_message(*group, {}));
    if (message.at("type") == "stop") return;
    answer_trial(message, fn, group);  // the leader answers; a member's result is the same
  }
}

}  // namespace magmadnn::tune
