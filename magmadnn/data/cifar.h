/// @file cifar.h
/// CIFAR-10 and CIFAR-100 data sets from their binary distributions.
///
/// Files, looked up in `dir` as `name`, then `name.gz`:
///  - CIFAR-10: data_batch_1.bin .. data_batch_5.bin (10000 images each), test_batch.bin;
///  - CIFAR-100: train.bin (50000), test.bin (10000).
/// Images come as {N, 3, 32, 32}, labels one-hot {N, classes}. Pixels are
/// scaled as ImageOptions says (v1 used p/128 - 1; the default here is p/255).
/// Errors (missing file, wrong record size, label out of range) throw IOError
/// naming the file.
#pragma once

#include <string>

#include "magmadnn/data/dataset.h"

namespace magmadnn::data {

/// CIFAR-10: Train reads all five training batches (50000 images), Test the test batch.
template <typename T = float>
ImageSet<T> load_cifar10(const std::string& dir, dataset_type split, const ImageOptions& opts = {});
/// One CIFAR-10 training batch, batch_idx in [1, 5] (v1's CIFAR10 constructor).
template <typename T = float>
ImageSet<T> load_cifar10_batch(const std::string& dir, int batch_idx, const ImageOptions& opts = {});
/// CIFAR-100 with its 100 fine labels, or its 20 coarse (super-class) labels.
template <typename T = float>
ImageSet<T> load_cifar100(const std::string& dir, dataset_type split, bool coarse = false,
                          const ImageOptions& opts = {});

/// load_cifar10 and load_cifar100 with the images kept as the files' uint8
/// (1 byte a pixel; see load_mnist_source): promoted per batch, the same
/// values as the float loaders give, bit for bit.
template <typename T = float>
SourceImageSet<T> load_cifar10_source(const std::string& dir, dataset_type split, const ImageOptions& opts = {});
template <typename T = float>
SourceImageSet<T> load_cifar100_source(const std::string& dir, dataset_type split, bool coarse = false,
                                       const ImageOptions& opts = {});

/// MagmaDNN v1's CIFAR10: the Test split, or training batch `batch_idx` (1..5).
template <typename T>
class CIFAR10 : public Dataset<T> {
 public:
  CIFAR10(const std::string& root, dataset_type type, std::uint32_t batch_idx = 1, const ImageOptions& opts = {});
};

/// MagmaDNN v1's CIFAR100: fine labels; nsuperclasses() is 20 and
/// superclasses() holds each image's coarse label.
template <typename T>
class CIFAR100 : public Dataset<T> {
 public:
  CIFAR100(const std::string& root, dataset_type type, const ImageOptions& opts = {});
  std::uint32_t nsuperclasses() const { return 20; }
  const std::vector<std::uint8_t>& superclasses() const { return coarse_; }

 private:
  std::vector<std::uint8_t> coarse_;
};

}  // namespace magmadnn::data
