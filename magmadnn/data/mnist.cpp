#include "magmadnn/data/mnist.h"

#include <algorithm>
#include <iostream>

#include "magmadnn/core/errors.h"
#include "magmadnn/io/byte_reader.h"
#include "magmadnn/io/idx.h"

namespace magmadnn::data {

namespace {
io::IdxArray read_checked(const std::string& path, std::int64_t ndim, const char* what) {
  io::IdxArray a = io::read_idx(path);
  MAGMADNN_CHECK(a.type == io::IdxType::u8 && a.shape.ndim() == ndim, IOError,
                 path << ": expected " << what << " (IDX uint8 with " << ndim << " dimensions), found "
                      << io::idx_type_name(a.type) << " of shape " << a.shape);
  return a;
}
}  // namespace

template <typename T>
SourceImageSet<T> load_mnist_source(const std::string& dir, dataset_type split, const ImageOptions& opts) {
  const std::string prefix = dir + (split == Test ? "/t10k" : "/train");
  std::string images_path, labels_path;
  try {
    images_path = io::find_plain_or_gz(prefix + "-images-idx3-ubyte");
    labels_path = io::find_plain_or_gz(prefix + "-labels-idx1-ubyte");
  } catch (const IOError& e) {
    if (dir == kFashionMnistDir)
      MAGMADNN_THROW(IOError, e.what() << "; install the data set with: apt-get install dataset-fashion-mnist");
    throw;
  }
  io::IdxArray img = read_checked(images_path, 3, "MNIST images");
  const io::IdxArray lab = read_checked(labels_path, 1, "MNIST labels");
  const std::int64_t n = img.shape[0], rows = img.shape[1], cols = img.shape[2];
  MAGMADNN_CHECK(lab.shape[0] == n, IOError,
                 "MNIST counts disagree: " << images_path << " has " << n << " images but " << labels_path
                                           << " has " << lab.shape[0] << " labels");
  MAGMADNN_CHECK(n > 0, IOError, images_path << " holds no images (shape " << img.shape << ")");
  MAGMADNN_CHECK(rows > 0 && cols > 0, IOError,
                 images_path << ": images of " << rows << "x" << cols << " pixels (shape " << img.shape
                             << "); both sides must be at least 1");
  MAGMADNN_CHECK(opts.num_classes >= 0, ValueError, "load_mnist: num_classes " << opts.num_classes << " < 0");
  SourceImageSet<T> set;
  set.classes.assign(lab.bytes.begin(), lab.bytes.end());
  set.num_classes = opts.num_classes;
  if (set.num_classes == 0) {
    set.num_classes = set.classes.empty() ? 1 : 1 + *std::max_element(set.classes.begin(), set.classes.end());
  }
  const std::int64_t classes = set.num_classes;
  for (std::int64_t i = 0; i < n; ++i)
    MAGMADNN_CHECK(set.classes[i] < classes, IOError,
                   labels_path << ": label " << int(set.classes[i]) << " of image " << i << " (offset " << 8 + i
                               << ") is outside [0, " << classes << ")");
  // The file's bytes become the data set as they are: no copy, no conversion.
  set.images = Samples<T>::from_bytes({n, 1, rows, cols},
                                      std::make_shared<const std::vector<std::uint8_t>>(std::move(img.bytes)),
                                      detail::pixel_affine(opts.pixels));
  Tensor<T> labels({n, classes}, {ZERO, {}}, HOST);
  T* l = labels.mutable_host_data();
  for (std::int64_t i = 0; i < n; ++i) l[i * classes + set.classes[i]] = T(1);
  set.labels = opts.memory == HOST ? std::move(labels) : labels.to(opts.memory);
  return set;
}

template <typename T>
ImageSet<T> load_mnist(const std::string& dir, dataset_type split, const ImageOptions& opts) {
  return promote(load_mnist_source<T>(dir, split, opts), opts.memory);
}

template <typename T>
SourceImageSet<T> load_fashion_mnist_source(dataset_type split, const ImageOptions& opts) {
  return load_mnist_source<T>(kFashionMnistDir, split, opts);
}

template <typename T>
ImageSet<T> load_fashion_mnist(dataset_type split, const ImageOptions& opts) {
  return load_mnist<T>(kFashionMnistDir, split, opts);
}

template <typename T>
MNIST<T>::MNIST(const std::string& root, dataset_type type, const ImageOptions& opts) : pixels_(opts.pixels) {
  this->adopt(load_mnist<T>(root, type, opts));
}

template <typename T>
void MNIST<T>::print_image(std::uint32_t idx, std::ostream& os) const {
  MAGMADNN_CHECK(idx < this->nimages_, IndexError,
                 "MNIST::print_image: image " << idx << " of " << this->nimages_);
  const auto [scale, shift] = detail::pixel_affine(pixels_);
  const std::vector<T> px = this->images_.slice(idx, idx + 1).to_vector();
  static constexpr char kShades[] = " .:-=+*#%@";
  os << "Image[" << idx << "] is class " << int(this->classes_[idx]) << ":\n";
  for (std::uint32_t r = 0; r < this->nrows_; ++r) {
    for (std::uint32_t c = 0; c < this->ncols_; ++c) {
      const double p = (static_cast<double>(px[r * this->ncols_ + c]) - shift) / scale;  // back to 0..255
      const int shade = std::clamp(static_cast<int>(p * 10.0 / 256.0), 0, 9);
      os << kShades[shade];
    }
    os << '\n';
  }
}

template <typename T>
void MNIST<T>::print_image(std::uint32_t idx) const {
  print_image(idx, std::cout);
}

template SourceImageSet<float> load_mnist_source<float>(const std::string&, dataset_type, const ImageOptions&);
template SourceImageSet<double> load_mnist_source<double>(const std::string&, dataset_type, const ImageOptions&);
template SourceImageSet<float> load_fashion_mnist_source<float>(dataset_type, const ImageOptions&);
template SourceImageSet<double> load_fashion_mnist_source<double>(dataset_type, const ImageOptions&);
template ImageSet<float> load_mnist<float>(const std::string&, dataset_type, const ImageOptions&);
template ImageSet<double> load_mnist<double>(const std::string&, dataset_type, const ImageOptions&);
template ImageSet<float> load_fashion_mnist<float>(dataset_type, const ImageOptions&);
template ImageSet<double> load_fashion_mnist<double>(dataset_type, const ImageOptions&);
template class MNIST<float>;
template class MNIST<double>;

}  // namespace magmadnn::data
