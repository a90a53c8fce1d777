/// @file precision.h
/// The arithmetic precision a training run computes in (`precision` in the
/// config, `--precision` on the command line).
///
///  - FP32: everything in float (the default).
///  - BF16: GEMMs and convolutions read bfloat16 copies of their operands and
///    accumulate in float; the rest stays float (see compute/autocast.h). On
///    the CPU through oneDNN (fast with AVX-512 BF16 or AMX); on a GPU GEMMs
///    through cublasGemmEx and convolutions through cuDNN.
///  - FP16: as BF16 with IEEE half, on a GPU only (cublasGemmEx, cuDNN),
///    with dynamic loss scaling (optimizer/loss_scaler.h; a run at fp16
///    always scales, run/spec.h).
///  - TF32: float storage, GPU GEMMs (cuBLAS, cuBLASLt) and convolutions
///    (cuDNN) on tensor cores with a 10-bit mantissa and float accumulation
///    (core/thread_precision.h tells the backend).
///
/// The GPU paths of BF16, FP16 and TF32 passed their tests on an H100
/// (docs/gpu.md). Master weights, gradients and optimizer state are float in
/// every mode.
#pragma once

#include <string>

namespace magmadnn {

enum class Precision : unsigned char { FP32, BF16, FP16, TF32 };

/// "fp32", "bf16", "fp16", "tf32".
const char* precision_name(Precision p) noexcept;
/// Inverse of precision_name; ValueError listing the valid names otherwise.
Precision parse_precision(const std::string& name);

/// Throws NotSupportedError, saying why, when `p` cannot run where the
/// training runs (`on_gpu`): fp16 and tf32 need a GPU (the CPU has neither
/// half arithmetic worth using nor tensor cores, and silently computing in
/// fp32 would make a run's precision a lie). fp32 and bf16 run everywhere,
/// every precision on a GPU.
void check_precision_available(Precision p, bool on_gpu);

}  // namespace magmadnn
