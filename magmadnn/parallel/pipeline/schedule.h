/// @file schedule.h
/// The order in which one pipeline stage runs the forward and backward
/// passes of a batch's micro-batches (docs/hybrid.md, "Pipelines").
///
///  - GPipe (Huang et al., 2019): every micro-batch forward, then every
///    micro-batch backward (last first). A stage holds all M micro-batches
///    between their forward and their backward.
///  - 1F1B (PipeDream-flush, Narayanan et al., 2021): stage s of S runs
///    min(S - s - 1, M) forwards, then alternates one forward and one
///    backward, then the remaining backwards; it holds at most S - s
///    micro-batches (at most S) at any time.
///
/// Both give every stage each micro-batch's forward once and backward once,
/// a backward after its forward; the update after the last backward is the
/// same for both (gradients are summed over the micro-batches).
#pragma once

#include <string>
#include <vector>

namespace magmadnn::distributed::pipeline {

enum class Schedule { gpipe, one_f_one_b };

/// "gpipe" or "1f1b".
const char* schedule_name(Schedule s) noexcept;
/// The schedule named `name` ("gpipe" or "1f1b"); ValueError naming the
/// choices otherwise.
Schedule parse_schedule(const std::string& name);
/// The names parse_schedule accepts, in that order.
const std::vector<std::string>& schedule_names();

/// One pass of one micro-batch on one stage.
struct Action {
  bool forward = true;
  int micro = 0;
  bool operator==(const Action&) const = default;
};

/// Stage `stage`'s actions for one batch of `micro_batches`, in order.
/// Requires 0 <= stage < stages and micro_batches >= 1 (ValueError otherwise).
std::vector<Action> stage_actions(Schedule schedule, int stage, int stages, int micro_batches);

/// The most micro-batches that are between their forward and their backward
/// at once along `actions` (what a stage must keep).
int peak_in_flight(const std::vector<Action>& actions);

}  // namespace magmadnn::distributed::pipeline
