/// @file input_states.h
/// Which contents a convolution call's two inputs hold, for algorithms that
/// keep something derived from an input between the passes of a step.
///
/// conv2d_forward, conv2d_backward_data and conv2d_backward_filter
/// (conv.cpp) open an InputStatesScope around the algorithm's call with the
/// inputs' write stamps (MemoryManager::write_stamp: unique across the
/// process to one state of one array): forward (x, w), backward data
/// (dy, w), backward filter (x, dy). oneDNN's algorithm keeps its blocked
/// copy of x from the forward pass, and of dy from the backward data pass,
/// and the backward filter pass reuses them when address and stamp match,
/// instead of reordering the same tensor again.
///
/// It keeps them only while the chooser has not given that problem's
/// backward filter pass to another algorithm, which would never read them,
/// and never for a forward pass made with keep_inputs false (a convolution
/// node in eval mode: inference).
///
/// Guarantees: the states are per thread and restored when the scope ends,
/// so calls outside a scope (the chooser's timing runs, direct calls of an
/// algorithm) see 0, "unknown", and never reuse anything.
#pragma once

#include <cstddef>
#include <cstdint>

namespace magmadnn::conv {

struct InputStates {
  std::uint64_t in0 = 0, in1 = 0;  ///< 0: unknown
};

/// The innermost scope's states on this thread ({0, 0} outside any).
const InputStates& current_input_states() noexcept;

class InputStatesScope {
 public:
  InputStatesScope(std::uint64_t in0, std::uint64_t in1) noexcept;
  ~InputStatesScope();
  InputStatesScope(const InputStatesScope&) = delete;
  InputStatesScope& operator=(const InputStatesScope&) = delete;

 private:
  InputStates saved_;
};

/// Bytes of reordered inputs oneDNN's algorithm holds now (for tests and
/// memory accounting; defined in onednn_conv.cpp).
std::size_t onednn_kept_input_bytes();

}  // namespace magmadnn::conv
