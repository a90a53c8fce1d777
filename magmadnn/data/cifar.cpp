#include "magmadnn/data/cifar.h"

#include "magmadnn/core/errors.h"
#include "magmadnn/io/byte_reader.h"
#include "magmadnn/io/cifar.h"

namespace magmadnn::data {

namespace {

io::CifarRecords read_all(const std::vector<std::string>& paths, io::CifarKind kind) {
  io::CifarRecords all;
  for (const std::string& p : paths) {
    io::CifarRecords r = io::read_cifar_bin(io::find_plain_or_gz(p), kind);
    all.count += r.count;
    all.pixels.insert(all.pixels.end(), r.pixels.begin(), r.pixels.end());
    all.fine.insert(all.fine.end(), r.fine.begin(), r.fine.end());
    all.coarse.insert(all.coarse.end(), r.coarse.begin(), r.coarse.end());
  }
  return all;
}

// The records' pixels become the images as they are (uint8, moved, not
// copied); `labels` are copied since CIFAR-100 has two label sets.
template <typename T>
SourceImageSet<T> to_source_set(io::CifarRecords&& r, const std::vector<std::uint8_t>& labels,
                                std::int64_t classes, const ImageOptions& opts) {
  const std::int64_t n = r.count;
  Tensor<T> onehot({n, classes}, {ZERO, {}}, HOST);
  T* y = onehot.mutable_host_data();
  for (std::int64_t i = 0; i < n; ++i) y[i * classes + labels[i]] = T(1);
  SourceImageSet<T> set;
  set.classes = labels;
  set.images = Samples<T>::from_bytes({n, io::kCifarChannels, io::kCifarRows, io::kCifarCols},
                                      std::make_shared<const std::vector<std::uint8_t>>(std::move(r.pixels)),
                                      detail::pixel_affine(opts.pixels));
  set.labels = opts.memory == HOST ? std::move(onehot) : onehot.to(opts.memory);
  set.num_classes = classes;
  return set;
}

template <typename T>
ImageSet<T> to_image_set(io::CifarRecords&& r, const std::vector<std::uint8_t>& labels, std::int64_t classes,
                         const ImageOptions& opts) {
  return promote(to_source_set<T>(std::move(r), labels, classes, opts), opts.memory);
}

// CIFAR-10's binary files of a split: one test batch, five training ones.
std::vector<std::string> cifar10_files(const std::string& dir, dataset_type split) {
  std::vector<std::string> paths;
  if (split == Test) {
    paths.push_back(dir + "/test_batch.bin");
  } else {
    for (int b = 1; b <= 5; ++b) paths.push_back(dir + "/data_batch_" + std::to_string(b) + ".bin");
  }
  return paths;
}

}  // namespace

template <typename T>
ImageSet<T> load_cifar10(const std::string& dir, dataset_type split, const ImageOptions& opts) {
  io::CifarRecords r = read_all(cifar10_files(dir, split), io::CifarKind::Cifar10);
  const std::vector<std::uint8_t> fine = r.fine;
  return to_image_set<T>(std::move(r), fine, 10, opts);
}

template <typename T>
ImageSet<T> load_cifar10_batch(const std::string& dir, int batch_idx, const ImageOptions& opts) {
  MAGMADNN_CHECK(batch_idx >= 1 && batch_idx <= 5, ValueError,
                 "CIFAR-10 has training batches 1 to 5, not " << batch_idx);
  io::CifarRecords r = read_all({dir + "/data_batch_" + std::to_string(batch_idx) + ".bin"}, io::CifarKind::Cifar10);
  const std::vector<std::uint8_t> fine = r.fine;
  return to_image_set<T>(std::move(r), fine, 10, opts);
}

template <typename T>
SourceImageSet<T> load_cifar10_source(const std::string& dir, dataset_type split, const ImageOptions& opts) {
  io::CifarRecords r = read_all(cifar10_files(dir, split), io::CifarKind::Cifar10);
  const std::vector<std::uint8_t> fine = r.fine;
  return to_source_set<T>(std::move(r), fine, 10, opts);
}

template <typename T>
SourceImageSet<T> load_cifar100_source(const std::string& dir, dataset_type split, bool coarse,
                                       const ImageOptions& opts) {
  io::CifarRecords r = read_all({dir + (split == Test ? "/test.bin" : "/train.bin")}, io::CifarKind::Cifar100);
  const std::vector<std::uint8_t> labels = coarse ? r.coarse : r.fine;
  return to_source_set<T>(std::move(r), labels, coarse ? 20 : 100, opts);
}

template <typename T>
ImageSet<T> load_cifar100(const std::string& dir, dataset_type split, bool coarse, const ImageOptions& opts) {
  return promote(load_cifar100_source<T>(dir, split, coarse, opts), opts.memory);
}

template <typename T>
CIFAR10<T>::CIFAR10(const std::string& root, dataset_type type, std::uint32_t batch_idx, const ImageOptions& opts) {
  this->adopt(type == Test ? load_cifar10<T>(root, Test, opts)
                           : load_cifar10_batch<T>(root, static_cast<int>(batch_idx), opts));
}

template <typename T>
CIFAR100<T>::CIFAR100(const std::string& root, dataset_type type, const ImageOptions& opts) {
  io::CifarRecords r = read_all({root + (type == Test ? "/test.bin" : "/train.bin")}, io::CifarKind::Cifar100);
  coarse_ = r.coarse;
  const std::vector<std::uint8_t> fine = r.fine;
  this->adopt(to_image_set<T>(std::move(r), fine, 100, opts));
}

#define MAGMADNN_CIFAR_INSTANTIATE(T)                                                                 \
  template ImageSet<T> load_cifar10<T>(const std::string&, dataset_type, const ImageOptions&);        \
  template ImageSet<T> load_cifar10_batch<T>(const std::string&, int, const ImageOptions&);           \
  template SourceImageSet<T> load_cifar10_source<T>(const std::string&, dataset_type, const ImageOptions&);   \
  template SourceImageSet<T> load_cifar100_source<T>(const std::string&, dataset_type, bool,                   \
                                                     const ImageOptions&);                                      \
  template ImageSet<T> load_cifar100<T>(const std::string&, dataset_type, bool, const ImageOptions&); \
  template class CIFAR10<T>;                                                                          \
  template class CIFAR100<T>;
MAGMADNN_CIFAR_INSTANTIATE(float)
MAGMADNN_CIFAR_INSTANTIATE(double)
#undef MAGMADNN_CIFAR_INSTANTIATE

}  // namespace magmadnn::data
