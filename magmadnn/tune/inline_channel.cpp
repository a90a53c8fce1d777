#include "magmadnn/tune/inline_channel.h"

#include "magmadnn/core/errors.h"
#include "magmadnn/tune/worker.h"

namespace magmadnn::tune {

void InlineChannel::send(int worker, const std::string& message) {
  MAGMADNN_CHECK(worker == 0, ValueError, "InlineChannel: one worker, 0; got " << worker);
  queued_.push_back(message);
}

std::vector<ChannelEvent> InlineChannel::wait() {
  MAGMADNN_CHECK(!queued_.empty(), ValueError, "InlineChannel: waiting with no trial sent");
  std::vector<ChannelEvent> events;
  for (const std::string& m : queued_) events.push_back({0, ChannelEvent::Kind::message, answer_trial(Json::parse(m), fn_, nullptr)});
  queued_.clear();
  return events;
}

}  // namespace magmadnn::tune
