#include "magmadnn/run/dataset.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "magmadnn/core/errors.h"
#include "magmadnn/data/cifar.h"
#include "magmadnn/data/holdout.h"
#include "magmadnn/data/mnist.h"
#include "magmadnn/io/byte_reader.h"
#include "magmadnn/io/csv.h"
#include "magmadnn/io/idx.h"

namespace magmadnn::run {
namespace fs = std::filesystem;

namespace {

constexpr double kPixelScale = 1.0 / 255.0;

// A first line is a header when none of its cells is a number: one bad cell
// in a row of numbers is an error to report, not a header to skip.
bool csv_has_header(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line) && line.find_first_not_of(" \t\r") == std::string::npos) {
  }
  std::stringstream cells(line);
  for (std::string cell; std::getline(cells, cell, ',');) {
    std::size_t used = 0;
    try {
      std::stod(cell, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used > 0) return false;
  }
  return !line.empty();
}

// The 1-based line of data row `row` (blank lines and the header skipped,
// as io::read_csv skips them).
std::int64_t csv_line_of_row(const std::string& path, bool header, std::int64_t row) {
  std::ifstream in(path);
  std::string line;
  std::int64_t n = 0, data_rows = header ? -1 : 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (data_rows++ == row) return n;
  }
  return n;
}

}  // namespace

std::int64_t dataset_classes(const std::string& dataset) {
  if (dataset == "cifar100") return 100;
  return dataset == "fashion-mnist" || dataset == "mnist" || dataset == "cifar10" ? 10 : 0;
}

std::int64_t dataset_classes(const DataSpec& d) {
  if (d.dataset == "folder") return static_cast<std::int64_t>(data::image_folder_classes(d.train_dir).size());
  return d.dataset == "synthetic" ? d.classes : dataset_classes(d.dataset);
}

namespace {

std::uint64_t mix64(std::uint64_t z) {  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Split synthetic_split(const DataSpec& d, bool train, std::int64_t classes, std::uint64_t seed) {
  const std::int64_t total = train ? d.train_samples : d.test_samples;
  const std::int64_t limit = train ? d.limit_train : d.limit_test;
  const std::int64_t n = limit > 0 ? std::min(limit, total) : total;
  if (classes <= 0) classes = d.classes;
  // Train and test draw from different streams of the same seed.
  const std::uint64_t stream = mix64(seed ^ (train ? 0x7261696eull : 0x74657374ull));
  std::vector<std::int64_t> shape{n};
  shape.insert(shape.end(), d.shape.begin(), d.shape.end());
  auto fill = std::make_shared<const data::Samples<float>::RowFill>([stream, row = Shape(shape).numel() / std::max<std::int64_t>(n, 1)](
                                                                        std::int64_t id, float* dst) {
    std::uint64_t state = mix64(stream + 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(id + 1));
    for (std::int64_t k = 0; k < row; ++k) {
      state += 0x9e3779b97f4a7c15ull;
      dst[k] = static_cast<float>(mix64(state) >> 40) * 0x1.0p-24f;  // 24 random bits: uniform in [0, 1)
    }
  });
  Split s;
  s.source = "synthetic";
  s.x = data::Samples<float>::generated(Shape(shape), std::move(fill));
  s.y = Tensor<float>(Shape({n, classes}), {ZERO}, HOST);
  float* y = n > 0 ? s.y.mutable_host_data() : nullptr;
  s.labels.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const auto c = static_cast<std::int64_t>(mix64(stream ^ mix64(static_cast<std::uint64_t>(i))) %
                                             static_cast<std::uint64_t>(classes));
    s.labels[static_cast<std::size_t>(i)] = c;
    y[i * classes + c] = 1.0f;
  }
  return s;
}

// Keeps the first n samples of a loaded set in s (all of them without a copy;
// otherwise copies of the first n, so the rest of the file is freed).
void keep_first(Split& s, data::SourceImageSet<float>& set, std::int64_t n) {
  s.labels.assign(set.classes.begin(), set.classes.begin() + n);
  if (n == set.images.rows()) {
    s.x = std::move(set.images);
    s.y = std::move(set.labels);
  } else {
    std::vector<std::int64_t> first(static_cast<std::size_t>(n));
    std::iota(first.begin(), first.end(), std::int64_t{0});
    s.x = set.images.take(first);
    s.y = set.labels.slice(0, n).to(HOST);
  }
}

Split cifar_split(const DataSpec& d, bool train, std::int64_t classes) {
  data::ImageOptions o;
  o.num_classes = classes;
  const data::dataset_type which = train ? data::Train : data::Test;
  data::SourceImageSet<float> set = d.dataset == "cifar10" ? data::load_cifar10_source<float>(d.dir, which, o)
                                                           : data::load_cifar100_source<float>(d.dir, which, false, o);
  const std::int64_t total = set.images.rows();
  const std::int64_t limit = train ? d.limit_train : d.limit_test;
  const std::int64_t n = limit > 0 ? std::min(limit, total) : total;
  Split s;
  s.source = d.dir + "/" +
             (d.dataset == "cifar10" ? (train ? "data_batch_*.bin" : "test_batch.bin") : (train ? "train.bin" : "test.bin"));
  keep_first(s, set, n);
  return s;
}

data::ImageFolderOptions folder_options(const DataSpec& d) {
  data::ImageFolderOptions o;
  o.channels = static_cast<int>(d.shape.at(0));
  o.height = d.shape.at(1);
  o.width = d.shape.at(2);
  o.mean = d.mean;
  o.std = d.std;
  o.augment = d.augment;
  o.min_scale = d.min_scale;
  o.center_crop = d.center_crop;
  o.on_bad = d.on_error == "refuse" ? data::BadImage::Refuse : data::BadImage::Skip;
  o.verify = d.verify;
  o.threads = static_cast<int>(d.decode_threads);
  return o;
}

Split folder_split(const DataSpec& d, bool train, std::int64_t classes) {
  MAGMADNN_CHECK(d.shape.size() == 3, ValueError, "data.shape: image folders need [C, H, W], got " << Shape(d.shape));
  data::ImageFolderOptions o = folder_options(d);
  o.classes = data::image_folder_classes(d.train_dir);
  MAGMADNN_CHECK(classes <= 0 || classes == static_cast<std::int64_t>(o.classes.size()), IOError,
                 "image folder " << d.train_dir << ": " << o.classes.size() << " class folders, but " << classes
                                 << " classes were asked for");
  const std::string& root = train ? d.train_dir : d.test_dir;
  data::FolderIndex idx = data::scan_image_folder(root, o);
  const std::int64_t total = static_cast<std::int64_t>(idx.files.size());
  const std::int64_t limit = train ? d.limit_train : d.limit_test;
  if (limit > 0 && limit < total) {
    // Spread over the listing, so every class keeps its share.
    data::FolderIndex kept = idx;
    kept.files.clear();
    kept.labels.clear();
    for (std::int64_t i = 0; i < limit; ++i) {
      const auto k = static_cast<std::size_t>(i * total / limit);
      kept.files.push_back(idx.files[k]);
      kept.labels.push_back(idx.labels[k]);
    }
    idx = std::move(kept);
  }
  const auto n = static_cast<std::int64_t>(idx.files.size());
  const auto k = static_cast<std::int64_t>(idx.classes.size());
  Split s;
  s.source = root;
  s.labels = idx.labels;
  s.y = Tensor<float>(Shape({n, k}), {ZERO}, HOST);
  float* y = n > 0 ? s.y.mutable_host_data() : nullptr;
  for (std::int64_t i = 0; i < n; ++i) y[i * k + s.labels[static_cast<std::size_t>(i)]] = 1.0f;
  auto source = std::make_shared<const data::ImageFolderSource<float>>(std::move(idx), o);
  s.x = data::image_folder_samples<float>(source);
  s.folder = std::move(source);
  return s;
}

}  // namespace

Split load_data(const DataSpec& d, const std::string& split, std::int64_t classes, std::uint64_t seed) {
  MAGMADNN_CHECK(split == "train" || split == "test", ValueError, "unknown split \"" << split << "\"");
  const bool train = split == "train";
  if (d.dataset == "synthetic") return synthetic_split(d, train, classes, seed);
  if (d.dataset == "folder") return folder_split(d, train, classes);
  if (d.dataset == "cifar10" || d.dataset == "cifar100") return cifar_split(d, train, classes);
  return load_split(d.dir, split, train ? d.limit_train : d.limit_test, classes);
}

void check_sample_shape(const Split& s, const std::vector<std::int64_t>& want, const std::string& want_what) {
  const std::vector<std::int64_t> dims = s.x.shape().dims();
  const std::vector<std::int64_t> got(dims.begin() + 1, dims.end());
  MAGMADNN_CHECK(got == want, IOError,
                 s.source << ": images of shape " << Shape(got) << ", but " << want_what << " " << Shape(want));
}

Split load_split(const std::string& dir, const std::string& split, std::int64_t limit, std::int64_t classes) {
  MAGMADNN_CHECK(split == "train" || split == "test", ValueError, "unknown split \"" << split << "\"");
  data::ImageOptions o;
  o.num_classes = classes;  // 0: one more than the largest label
  data::SourceImageSet<float> set;
  try {
    set = data::load_mnist_source<float>(dir, split == "train" ? data::Train : data::Test, o);
  } catch (const IOError& e) {
    if (std::string(e.what()).find("file not found") != std::string::npos && dir != data::kFashionMnistDir) {
      MAGMADNN_THROW(IOError, e.what() << " (install the Debian package dataset-fashion-mnist, or pass --data DIR "
                                          "with the MNIST-format IDX files)");
    }
    throw;
  }
  const std::int64_t total = set.images.rows();
  const std::int64_t n = limit > 0 ? std::min(limit, total) : total;
  Split s;
  s.source = io::find_plain_or_gz(dir + (split == "train" ? "/train" : "/t10k") + "-images-idx3-ubyte");
  s.label_source = io::find_plain_or_gz(dir + (split == "train" ? "/train" : "/t10k") + "-labels-idx1-ubyte");
  keep_first(s, set, n);
  return s;
}

Split subset(const Split& s, const std::vector<std::int64_t>& rows) {
  Split out;
  out.source = s.source;
  out.label_source = s.label_source;
  out.folder = s.folder;
  out.x = s.x.take(rows);
  out.y = data::take_rows(s.y, rows);
  out.labels.reserve(rows.size());
  for (auto r : rows) out.labels.push_back(s.labels.at(static_cast<std::size_t>(r)));
  return out;
}

namespace {
// Raw pixel values scaled like the training data (1/255), each checked to be
// one: `where(i, v)` names element i (holding v) for the error.
template <class Where>
void scale_pixels(std::vector<float>& values, Where where) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    MAGMADNN_CHECK(std::isfinite(v) && v >= 0.0f && v <= 255.0f, IOError,
                   where(static_cast<std::int64_t>(i), v) << " is not a pixel value in [0, 255]");
    values[i] = static_cast<float>(v * kPixelScale);
  }
}
}  // namespace

Tensor<float> load_inputs(const std::string& path, const std::vector<std::int64_t>& sample_shape) {
  MAGMADNN_CHECK(fs::exists(path), IOError, "input file " << path << " does not exist");
  std::int64_t sample_size = 1;
  for (auto d : sample_shape) sample_size *= d;
  std::vector<std::int64_t> shape{0};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());

  std::ifstream probe(path, std::ios::binary);
  unsigned char magic[2] = {1, 1};
  probe.read(reinterpret_cast<char*>(magic), 2);
  // IDX starts with two zero bytes, gzip with 1f 8b; a CSV with neither.
  const bool idx = (magic[0] == 0 && magic[1] == 0) || (magic[0] == 0x1f && magic[1] == 0x8b);
  std::vector<float> values;
  if (idx) {
    const io::IdxArray a = io::read_idx(path);
    // {N, sample_shape...}, or {N, H, W} for a one-channel {1, H, W}: the
    // shape the network was built for, not merely as many values.
    const std::vector<std::int64_t> dims = a.shape.dims();
    std::vector<std::int64_t> per(dims.begin() + (dims.empty() ? 0 : 1), dims.end());
    if (per.size() + 1 == sample_shape.size() && sample_shape[0] == 1) per.insert(per.begin(), 1);
    MAGMADNN_CHECK(dims.size() >= 2 && per == sample_shape, IOError,
                   path << ": shape " << a.shape << " does not hold samples of the network's input "
                        << Shape(sample_shape) << " (expected {N, " << Shape(sample_shape) << "} or {N, H, W})");
    // Whole-byte pixels are the training data's own type; float pixels are
    // raw values too and are checked; other integer types are not pixels.
    const bool is_float = a.type == io::IdxType::f32 || a.type == io::IdxType::f64;
    MAGMADNN_CHECK(a.type == io::IdxType::u8 || is_float, IOError,
                   path << ": IDX " << io::idx_type_name(a.type)
                        << " pixels; expected uint8 images (as trained on) or float32/float64 values in [0, 255]");
    values.resize(static_cast<std::size_t>(a.numel()));
    a.convert(values.data(), 1.0);
    const std::int64_t per_sample = a.shape[0] > 0 ? a.numel() / a.shape[0] : 1;
    scale_pixels(values, [&](std::int64_t i, float v) {
      std::ostringstream os;
      os << path << ": value " << v << " of sample " << i / per_sample << " (element " << i % per_sample << ")";
      return os.str();
    });
    shape[0] = a.shape[0];
  } else {
    io::CsvOptions o;
    o.header = csv_has_header(path);
    const Tensor<float> rows = io::read_csv<float>(path, o);
    const std::int64_t cols = rows.shape().ndim() == 2 ? rows.shape()[1] : 0;
    MAGMADNN_CHECK(cols == sample_size, IOError,
                   path << ": rows of " << cols << " values, but the network's input " << Shape(sample_shape)
                        << " takes " << sample_size);
    values = rows.to_vector();
    scale_pixels(values, [&](std::int64_t i, float v) {
      std::ostringstream os;
      os << path << ":" << csv_line_of_row(path, o.header, i / cols) << ": column " << i % cols + 1 << ": " << v;
      return os.str();
    });
    shape[0] = rows.shape()[0];
  }
  MAGMADNN_CHECK(shape[0] > 0, IOError, path << ": no samples");
  return Tensor<float>::from_vector(Shape(shape), values);
}

std::vector<std::string> class_names(const std::string& dataset, std::int64_t classes) {
  if (dataset == "fashion-mnist" && classes == 10) {
    return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
  }
  if (dataset == "cifar10" && classes == 10) {
    return {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
  }
  // MNIST's names are its digits, which are also the indices.
  std::vector<std::string> names;
  for (std::int64_t c = 0; c < classes; ++c) names.push_back(std::to_string(c));
  return names;
}

}  // namespace magmadnn::run
