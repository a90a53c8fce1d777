/// @file inline_channel.h
/// InlineChannel: the search in one process. One worker slot; the trials
/// sent to it run in order, in the caller's thread, when the master next waits, through
/// the same message handling as a worker process (worker.h). A trial that
/// throws is a failed trial, as elsewhere; nothing is ever lost.
#pragma once

#include <vector>
#include <string>

#include "magmadnn/tune/channel.h"
#include "magmadnn/tune/trial.h"

namespace magmadnn::tune {

class InlineChannel final : public MasterChannel {
 public:
  explicit InlineChannel(TrialFunction fn) : fn_(std::move(fn)) {}
  int workers() const override { return 1; }
  std::string describe(int) const override { return "the master's own process"; }
  void send(int worker, const std::string& message) override;
  std::vector<ChannelEvent> wait() override;
  void shut_down() override {}

 private:
  TrialFunction fn_;
  std::vector<std::string> queued_;
};

}  // namespace magmadnn::tune
