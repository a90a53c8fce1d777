/// @file determinism.h
/// Deterministic algorithms (PyTorch's use_deterministic_algorithms): where
/// the library would pick an implementation by timing it (the convolution
/// chooser, the pooling chooser, and under mixed precision whether a
/// convolution pass computes in bf16 or fp16: conv_bf16.h's
/// low_precision_conv_by_rule, and on the CPU how a GEMM with a steady beta
/// applies it: cpu_gemm.h's GemmBetaPath), it picks by a fixed rule instead, so the
/// same program on the same machine, thread count and rank count computes
/// the same bits every run. Timing-based picks are the fastest but depend on
/// the machine's load at the moment they are measured, and two algorithms
/// round differently.
///
/// Guarantees: process-wide (every thread sees the same setting); off by
/// default; reading it is one atomic load. It does not change anything
/// already chosen: set it before the first convolution or pooling runs.
#pragma once

namespace magmadnn {

bool deterministic_algorithms() noexcept;
void set_deterministic_algorithms(bool on) noexcept;

/// Sets the mode for its lifetime and restores the previous one.
class DeterministicScope {
 public:
  explicit DeterministicScope(bool on) noexcept : previous_(deterministic_algorithms()) {
    set_deterministic_algorithms(on);
  }
  ~DeterministicScope() { set_deterministic_algorithms(previous_); }
  DeterministicScope(const DeterministicScope&) = delete;
  DeterministicScope& operator=(const DeterministicScope&) = delete;

 private:
  bool previous_;
};

}  // namespace magmadnn
