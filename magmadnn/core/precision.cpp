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
  // tf32 is a mode of the GPU's float GEMMs and convolutions (cuBLAS
  // compute type, cuDNN math type). bf16 runs its GEMMs on the GPU through
  // cublasGemmEx (convolutions stay float there, as the autocast table lets
  // a pass do where low precision does not pay). fp16 needs half-precision
  // copies and kernels the device path does not have yet: a GPU run at fp16
  // would compute in fp32 and report otherwise, so it is refused.
  if (on_gpu && (p == Precision::TF32 || p == Precision::BF16)) return;
  MAGMADNN_CHECK(!on_gpu, NotSupportedError,
                 "precision " << precision_name(p) << " is not implemented on the GPU yet (bf16, tf32 and fp32 are)");
  MAGMADNN_CHECK(p != Precision::FP16, NotSupportedError,
                 "precision fp16 needs a GPU: the CPU has no fast half-precision GEMM or convolution (oneDNN "
                 "computes f16 only on AVX512-FP16/AMX-FP16 parts), so fp16 would be slower than fp32 and still "
                 "need loss scaling; use bf16 on the CPU");
  MAGMADNN_CHECK(p != Precision::TF32, NotSupportedError,
                 "precision tf32 needs a GPU: TF32 is a tensor-core mode of NVIDIA GPUs and the CPU has no "
                 "equivalent; use fp32, or bf16 for reduced-precision GEMMs on the CPU");
}

}  // namespace magmadnn
