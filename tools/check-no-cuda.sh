#!/usr/bin/env bash
# Fails if a (CPU-only) libmagmadnn links or references anything of CUDA:
# no NEEDED CUDA library, no undefined CUDA/cuBLAS/cuDNN/NCCL/cuRAND/cuFFT
# symbol, and no symbol of the CUDA backend itself.
set -euo pipefail
lib="$1"
bad=0
if readelf -d "$lib" | grep NEEDED | grep -Ei 'cuda|cublas|cudnn|curand|cufft|nccl'; then
  echo "check-no-cuda: $lib needs a CUDA library"; bad=1
fi
if nm -D "$lib" | grep -E ' U (cuda|cublas|cudnn|curand|cufft|nccl)'; then
  echo "check-no-cuda: $lib references CUDA symbols"; bad=1
fi
if nm -DC "$lib" | grep -E 'CudaKernels|make_cuda_backend|DevicePool'; then
  echo "check-no-cuda: $lib contains CUDA backend code"; bad=1
fi
((bad == 0)) && echo "check-no-cuda: $lib has no CUDA symbols"
exit $bad
