/// @file fft_cuda.h
/// FftCuda: convolution through 2-D real FFTs (cuFFT), for stride 1 and
/// dilation 1 (any padding, filter size and groups).
///
/// Every signal is zero-padded to L1 x L2, the smallest 2,3,5,7-smooth sizes
/// of at least (H + 2 pad_h) x (W + 2 pad_w); at that size the circular
/// correlations below equal the linear ones (no wrap-around reaches the kept
/// outputs). With ^ the 2-D real FFT and * complex conjugation:
///   forward          Y^[n,k]  = sum_c X^[n,c] * conj(W^[k,c]),  y = crop(IFFT)
///   backward_data    DX^[n,c] = sum_k DY^[n,k] * W^[k,c],       dx = crop at pad
///   backward_filter  DW^[k,c] = sum_n X^[n,c] * conj(DY^[n,k]), dw = crop R x S
/// The channel sums are one CUDA kernel per pass (one thread per output
/// frequency, coalesced along frequencies). Images are processed in blocks
/// (near 256 MiB of spectra each). cuFFT plans are cached per device and size
/// with auto-allocation off; their work areas come from the backend's pool.
#pragma once

#include "magmadnn/conv/algorithm.h"

namespace magmadnn::conv::cuda {

template <typename T>
class FftCuda final : public ConvAlgorithm<T> {
 public:
  Algo id() const noexcept override { return Algo::FFT; }
  DeviceKind device() const noexcept override { return DeviceKind::CUDA; }
  bool supports(const ConvProblem& pr, Pass pass) const override;
  std::size_t workspace_bytes(const ConvProblem& pr, Pass pass) const override;

  void forward(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* workspace) override;
  void backward_data(const ConvProblem& pr, const T* dy, const T* w, T* dx, void* workspace) override;
  void backward_filter(const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db, void* workspace) override;
};

/// Smallest n >= x whose only prime factors are 2, 3, 5 and 7 (cuFFT's fast sizes).
std::int64_t fft_size(std::int64_t x);

}  // namespace magmadnn::conv::cuda
