/// @file mnist.h
/// MNIST and Fashion-MNIST: 28x28 grey images in 10 classes, stored as IDX
/// files (`train-images-idx3-ubyte`, `train-labels-idx1-ubyte`,
/// `t10k-images-idx3-ubyte`, `t10k-labels-idx1-ubyte`).
///
/// Each file is looked up as `dir/name`, then `dir/name.gz`, so both the
/// original downloads and Debian's `dataset-fashion-mnist` package
/// (/usr/share/datasets/fashion-mnist/*.gz) work.
///
/// Pixels: MagmaDNN v1 mapped a pixel p to p/128 - 1 (range [-1, 0.992]).
/// We map it to p/255 (range [0, 1]) by default, the usual convention of
/// today's frameworks and reference models; `PixelScale::V1` restores v1's
/// mapping.
///
/// Guarantees: images come as {N, 1, 28, 28} (whatever rows and columns the
/// file declares), labels as one-hot {N, 10}. A missing file, a file that is
/// not IDX uint8 of the right rank, a file of no images or of images with a
/// side of 0, a label outside [0, 10), or an image file and a label file that
/// disagree on N throw IOError naming the files.
#pragma once

#include <iosfwd>
#include <string>

#include "magmadnn/data/dataset.h"

namespace magmadnn::data {

/// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// Loads the Train or Test split of an MNIST-format data set from `dir`.
template <typename T = float>
ImageSet<T> load_mnist(const std::string& dir, dataset_type split, const ImageOptions& opts = {});
/// load_mnist with the images kept as the file's uint8 (1 byte a pixel, 47 MB
/// for Fashion-MNIST's training set instead of 188 MB of float), promoted to
/// T per batch by the DataLoader and NeuralNetwork (Samples). Labels are
/// placed in opts.memory; the images stay on the host. load_mnist is this
/// set promoted, so both give the same values bit for bit.
template <typename T = float>
SourceImageSet<T> load_mnist_source(const std::string& dir, dataset_type split, const ImageOptions& opts = {});
/// load_mnist_source from kFashionMnistDir.
template <typename T = float>
SourceImageSet<T> load_fashion_mnist_source(dataset_type split, const ImageOptions& opts = {});
/// load_mnist from kFashionMnistDir.
template <typename T = float>
ImageSet<T> load_fashion_mnist(dataset_type split, const ImageOptions& opts = {});

/// MagmaDNN v1's MNIST data set: `MNIST<float> train_set(dir, data::Train)`.
template <typename T>
class MNIST : public Dataset<T> {
 public:
  explicit MNIST(const std::string& root, dataset_type type, const ImageOptions& opts = {});
  /// Prints image `idx` as text (its class, then one character per pixel by
  /// darkness) to `os`. Throws IndexError for idx >= nimages().
  void print_image(std::uint32_t idx, std::ostream& os) const;
  /// Prints to std::cout (v1 signature).
  void print_image(std::uint32_t idx) const;

 private:
  PixelScale pixels_;
};

}  // namespace magmadnn::data
