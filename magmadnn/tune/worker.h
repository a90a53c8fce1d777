/// @file worker.h
/// The worker side of a search: the protocol's messages and the loop that
/// serves them. Messages are JSON:
///   master -> worker  {"type": "trial", "trial": {...Trial}}   |  {"type": "stop"}
///   worker -> master  {"type": "result", "trial": i, "attempt": a, "outcome": {...TrialOutcome}}
///                     {"type": "bye"}   (the answer to stop)
/// A trial that throws is answered with a failed outcome carrying the
/// exception's message: the worker itself lives on.
///
/// Under mpirun with --ranks-per-trial K > 1, the group's rank 0 (its
/// leader) talks to the master and broadcasts each message to the group;
/// every rank of the group then calls the trial function with a
/// communicator of the group's ranks split afresh for that trial (so that a
/// trial that fails, leaving its communicator unusable, costs the group
/// nothing), and the leader alone answers.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/tune/channel.h"
#include "magmadnn/tune/trial.h"

namespace magmadnn::tune {

std::string trial_message(const Trial& trial);
std::string stop_message();

/// Runs the trial of a "trial" message and returns the "result" message.
/// With a `group` of more than one rank, collective over it (the split).
std::string answer_trial(const Json& message, const TrialFunction& fn,
                         const std::shared_ptr<distributed::Communicator>& group);

/// Test seam: called after a result has been sent (kill points in tests).
struct ServeHooks {
  std::function<void(const Trial&)> after_result;
};

/// Serves trials from `channel` until "stop" or until the master is gone.
/// With a `group` of more than one rank this is its leader (rank 0 of it).
void serve(WorkerChannel& channel, const TrialFunction& fn,
           const std::shared_ptr<distributed::Communicator>& group = nullptr, const ServeHooks& hooks = {});

/// A group rank other than the leader: trials come by broadcast from the leader.
void serve_group_member(const std::shared_ptr<distributed::Communicator>& group, const TrialFunction& fn);

}  // namespace magmadnn::tune
