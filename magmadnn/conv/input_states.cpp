#include "magmadnn/conv/input_states.h"

namespace magmadnn::conv {
namespace {
thread_local InputStates t_states;
}  // namespace

const InputStates& current_input_states() noexcept { return t_states; }

InputStatesScope::InputStatesScope(std::uint64_t in0, std::uint64_t in1) noexcept : saved_(t_states) {
  t_states = InputStates{in0, in1};
}

InputStatesScope::~InputStatesScope() { t_states = saved_; }

}  // namespace magmadnn::conv
