#include "magmadnn/parallel/pipeline/schedule.h"

#include <algorithm>

#include "magmadnn/core/errors.h"

namespace magmadnn::distributed::pipeline {

const char* schedule_name(Schedule s) noexcept { return s == Schedule::gpipe ? "gpipe" : "1f1b"; }

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names{"gpipe", "1f1b"};
  return names;
}

Schedule parse_schedule(const std::string& name) {
  if (name == "gpipe") return Schedule::gpipe;
  if (name == "1f1b") return Schedule::one_f_one_b;
  MAGMADNN_THROW(ValueError, "pipeline schedule: expected \"gpipe\" or \"1f1b\", got \"" << name << "\"");
}

std::vector<Action> stage_actions(Schedule schedule, int stage, int stages, int micro_batches) {
  MAGMADNN_CHECK(stages >= 1 && stage >= 0 && stage < stages, ValueError,
                 "pipeline: stage " << stage << " of " << stages << " does not exist");
  MAGMADNN_CHECK(micro_batches >= 1, ValueError, "pipeline: micro_batches must be >= 1, got " << micro_batches);
  std::vector<Action> out;
  out.reserve(2 * static_cast<std::size_t>(micro_batches));
  if (schedule == Schedule::gpipe) {
    for (int m = 0; m < micro_batches; ++m) out.push_back({true, m});
    for (int m = micro_batches - 1; m >= 0; --m) out.push_back({false, m});
    return out;
  }
  const int warm = std::min(stages - stage - 1, micro_batches);
  int f = 0, b = 0;
  while (f < warm) out.push_back({true, f++});
  while (f < micro_batches) {
    out.push_back({true, f++});
    out.push_back({false, b++});
  }
  while (b < micro_batches) out.push_back({false, b++});
  return out;
}

int peak_in_flight(const std::vector<Action>& actions) {
  int now = 0, peak = 0;
  for (const Action& a : actions) {
    now += a.forward ? 1 : -1;
    peak = std::max(peak, now);
  }
  return peak;
}

}  // namespace magmadnn::distributed::pipeline
