#include "magmadnn/tune/inline_channel.h"

#include "magmadnn/core/errors.h"
#include "magmadnn/tune/worker.h"

namespace magmadnn::tune {

void InlineChannel::send(int worker, const std::string& message) {
  MAGMADNN_CHECK(worker == 0 && !queued_, ValueError, "InlineChannel: one trial at a time, on worker 0");
  queued_ = message;
}

std::vector<ChannelEvent> InlineChannel::wait() {
  MAGMADNN_CHECK(queued_.has_value(), ValueError, "InlineChannel: waiting with no trial sent");
  const Json message = Json::parse(*queued_);
  queued_.reset();
  return {{0, ChannelEvent::Kind::message, answer_trial(message, fn_, nullptr)}};
}

}  // namespace magmadnn::tune
