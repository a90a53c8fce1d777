/// @file thread_precision.h
/// The precision the calling thread computes in: the one place it is kept,
/// below every layer that needs it. compute/autocast.h sets it (an
/// AutocastScope) and decides per op; the GPU backend reads it to choose
/// how float products are multiplied (TF32 tensor cores or strict FP32
/// FMA), since a backend kernel cannot see the graph node that called it.
///
/// Guarantees: per thread (thread_local), FP32 on a thread that never set
/// it; reading it costs one thread-local load.
#pragma once

#include "magmadnn/core/precision.h"

namespace magmadnn {

Precision thread_precision() noexcept;
void set_thread_precision(Precision p) noexcept;

/// Float GEMMs and convolutions on this thread may run on TF32 tensor cores.
inline bool tf32_math() noexcept { return thread_precision() == Precision::TF32; }

}  // namespace magmadnn
