/// @file transforms.h
/// Preparing data: per-channel normalisation, one-hot labels, and the
/// augmentations the DataLoader applies to each sample (random crop with
/// padding, horizontal flip).
///
/// Whole-tensor helpers work on any memory type (HOST and MANAGED in place;
/// DEVICE through a host round trip). Augmentations work on one sample in
/// host memory and take their randomness from the SampleRng they are given,
/// so the DataLoader can make each sample's augmentation depend only on
/// (seed, epoch, sample index).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "magmadnn/core/shape.h"
#include "magmadnn/data/sample_rng.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::data {

/// Mean and standard deviation of each channel (axis 1) of `images`
/// {N, C, ...}, computed in double.
template <typename T>
std::pair<std::vector<double>, std::vector<double>> channel_mean_std(const Tensor<T>& images);

/// images[:, c, ...] = (images[:, c, ...] - mean[c]) / std[c], in place.
/// `mean` and `std` hold C values, or one value for every channel. Throws
/// ShapeError for a count that fits neither, ValueError for a std <= 0.
template <typename T>
void normalize(Tensor<T>& images, const std::vector<double>& mean, const std::vector<double>& std);

/// One-hot rows {N, n_classes} from class indices {N} or {N, 1}. Throws
/// ValueError naming the position of a label that is not an integer in
/// [0, n_classes).
template <typename T>
Tensor<T> one_hot(const Tensor<T>& labels, std::int64_t n_classes, memory_t mem = HOST);
template <typename T>
Tensor<T> one_hot(const std::vector<std::int64_t>& labels, std::int64_t n_classes, memory_t mem = HOST);

/// A random change applied to one sample, in place.
/// Requires of implementations: `apply` is const and thread-safe (the
/// DataLoader calls it from several threads at once) and draws all its
/// randomness from `rng`; it keeps the sample's shape.
template <typename T>
class Transform {
 public:
  virtual ~Transform() = default;
  /// `x` points to one sample of `sample_shape` (no batch axis) in host memory.
  virtual void apply(T* x, const Shape& sample_shape, SampleRng& rng) const = 0;
};

/// Pads each image with `pad` pixels of `fill` on every side, then cuts out
/// a window of the original size at a random offset (each of the
/// (2 pad + 1)^2 offsets equally likely). Sample shape {C, H, W} or {H, W}.
template <typename T>
class RandomCropWithPadding : public Transform<T> {
 public:
  explicit RandomCropWithPadding(std::int64_t pad, T fill = T(0));
  void apply(T* x, const Shape& sample_shape, SampleRng& rng) const override;

 private:
  std::int64_t pad_;
  T fill_;
};

/// Mirrors the image left-right with probability p (the last axis is the
/// width). Any sample shape with at least one axis.
template <typename T>
class HorizontalFlip : public Transform<T> {
 public:
  explicit HorizontalFlip(double p = 0.5);
  void apply(T* x, const Shape& sample_shape, SampleRng& rng) const override;

 private:
  double p_;
};

}  // namespace magmadnn::data
