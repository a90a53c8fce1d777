/// @file dataset.h
/// The data-set vocabulary shared by the readers: the v1 `Dataset<T>` base
/// class with its accessors, the Train/Test split, how pixels are scaled, and
/// ImageSet, the plain struct the modern loaders return.
///
/// MagmaDNN v1 programs write
///   data::MNIST<float> train_set(dir, data::Train);
///   Tensor<float>& x = train_set.images();   // {N, C, H, W}
///   {batch, train_set.nchanels(), train_set.nrows(), train_set.ncols()}
/// so the counts are `unsigned int` (uint32_t), as in v1, and `nchanels` keeps
/// v1's spelling.
#pragma once

#include <cstdint>
#include <vector>

#include "magmadnn/data/samples.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::data {

/// Which part of a data set (v1 names).
enum dataset_type { Test, Train };

/// How 8-bit pixels become numbers.
///  - Unit (default here): p / 255, in [0, 1].
///  - V1: p / 128 - 1, in [-1, 0.9922] (what MagmaDNN v1's readers did).
///  - Raw: p, in [0, 255].
enum class PixelScale { Unit, V1, Raw };

/// Options shared by the image data-set loaders.
struct ImageOptions {
  PixelScale pixels = PixelScale::Unit;
  memory_t memory = HOST;  ///< where images and labels live
  /// Labels must lie in [0, num_classes) (one-hot rows of this width);
  /// 0: one more than the largest label in the file. MNIST loaders default
  /// to 10.
  std::int64_t num_classes = 10;
};

/// Images, one-hot labels and the class index of each image.
template <typename T>
struct ImageSet {
  Tensor<T> images;                   ///< {N, C, H, W}
  Tensor<T> labels;                   ///< {N, num_classes}, one-hot
  std::vector<std::uint8_t> classes;  ///< N class indices (the same labels, for metrics and histograms)
  std::int64_t num_classes = 0;
};

/// An ImageSet whose images stay in the file's type (uint8 for IDX ubyte and
/// CIFAR), with the pixel scale recorded, and are promoted to T batch by
/// batch by whoever reads them (Samples, samples.h). Labels are as in
/// ImageSet.
template <typename T>
struct SourceImageSet {
  Samples<T> images;                  ///< {N, C, H, W}, uint8 in memory
  Tensor<T> labels;                   ///< {N, num_classes}, one-hot
  std::vector<std::uint8_t> classes;  ///< N class indices
  std::int64_t num_classes = 0;
};

/// The set with its images promoted to T in `mem` (what the readers return
/// when asked for T: the same values, bit for bit).
template <typename T>
ImageSet<T> promote(SourceImageSet<T>&& s, memory_t mem) {
  ImageSet<T> out;
  out.images = s.images.to_tensor(mem);
  out.labels = std::move(s.labels);
  out.classes = std::move(s.classes);
  out.num_classes = s.num_classes;
  return out;
}

/// MagmaDNN v1's data-set base: owns the images and labels tensors and
/// exposes their sizes.
template <typename T>
class Dataset {
 public:
  virtual ~Dataset() = default;

  Tensor<T>& images() { return images_; }
  const Tensor<T>& images() const { return images_; }
  /// One-hot labels {N, nclasses()}.
  Tensor<T>& labels() { return labels_; }
  const Tensor<T>& labels() const { return labels_; }

  std::uint32_t nimages() const { return nimages_; }
  std::uint32_t nlabels() const { return nlabels_; }
  std::uint32_t nclasses() const { return nclasses_; }
  std::uint32_t nchanels() const { return nchanels_; }  // sic (v1)
  std::uint32_t nrows() const { return nrows_; }
  std::uint32_t ncols() const { return ncols_; }
  /// Class index of each image.
  const std::vector<std::uint8_t>& classes() const { return classes_; }

 protected:
  /// Takes over a loaded set and records its sizes.
  void adopt(ImageSet<T>&& set);

  Tensor<T> images_, labels_;
  std::vector<std::uint8_t> classes_;
  std::uint32_t nimages_ = 0, nlabels_ = 0, nclasses_ = 0, nchanels_ = 0, nrows_ = 0, ncols_ = 0;
};

template <typename T>
void Dataset<T>::adopt(ImageSet<T>&& set) {
  images_ = std::move(set.images);
  labels_ = std::move(set.labels);
  classes_ = std::move(set.classes);
  const Shape& s = images_.shape();
  nimages_ = static_cast<std::uint32_t>(s[0]);
  nchanels_ = static_cast<std::uint32_t>(s[1]);
  nrows_ = static_cast<std::uint32_t>(s[2]);
  ncols_ = static_cast<std::uint32_t>(s[3]);
  nlabels_ = static_cast<std::uint32_t>(labels_.shape()[0]);
  nclasses_ = static_cast<std::uint32_t>(set.num_classes);
}

namespace detail {
/// (scale, shift) such that value = pixel * scale + shift.
inline ByteScale pixel_affine(PixelScale p) {
  switch (p) {
    case PixelScale::Unit: return {1.0 / 255.0, 0.0};
    case PixelScale::V1: return {1.0 / 128.0, -1.0};
    case PixelScale::Raw: break;
  }
  return {1.0, 0.0};
}
}  // namespace detail

}  // namespace magmadnn::data
