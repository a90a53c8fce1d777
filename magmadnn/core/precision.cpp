#include "magmadnn/core/precision.h"

#include "magmadnn/core/errors.h"

namespace magmadnn {

const char* precision_name(Precision p) noexcept {
  switch (p) {
    case Precision::FP32: return "fp32";
    case Precision::BF16: return "bf16";
    case Precision::FP16: return "fp16";
    case Precision::TF32: return "tf32";
  }
  return "?";
}

Precision parse_precision(const std::string& name) {
  for (Precision p : {Precision::FP32, Precision::BF16, Precision::FP16, Precision::TF32}) {
    if (name == precision_name(p)) return p;
  }
  MAGMADNN_THROW(ValueError, "precision \"" << name << "\" is not one of fp32, bf16, fp16, tf32");
}

void check_precision_available(Precision p, bool on_gpu) {
  if (p == Precision::FP32) return;
  // On a GPU: tf32 is a mode of the float GEMMs and convolutions (cuBLAS
  // compute type, cuDNN math type); bf16 and fp16 run GEMMs through
  // cublasGemmEx and convolutions through cuDNN on low-precision copies,
  // accumulating in float (fp16's loss scaling is run/spec's business).
  if (on_gpu) return;
  MAGMADNN_CHECK(p != Precision::FP16, NotSupportedError,
                 "precision fp16 needs a GPU: the CPU has no fast half-precision GEMM or convolution (oneDNN "
                 "computes f16 only on AVX512-FP16/AMX-FP16 parts), so fp16 would be slower than fp32 and still "
                 "need loss scaling; use bf16 on the CPU");
  MAGMADNN_CHECK(p != Precision::TF32, NotSupportedError,
                 "precision tf32 needs a GPU: TF32 is a tensor-core mode of NVIDIA GPUs and the CPU has no "
                 "equivalent; use fp32, or bf16 for reduced-precision GEMMs on the CPU");
}

}  // namespace magmadnn
