#include "magmadnn/run/dataset.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "magmadnn/core/errors.h"
#include "magmadnn/data/holdout.h"
#include "magmadnn/data/mnist.h"
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

}  // namespace

Split load_split(const std::string& dir, const std::string& split, std::int64_t limit, std::int64_t classes) {
  MAGMADNN_CHECK(split == "train" || split == "test", ValueError, "unknown split \"" << split << "\"");
  data::ImageOptions o;
  o.num_classes = classes;  // 0: one more than the largest label
  data::ImageSet<float> set;
  try {
    set = data::load_mnist<float>(dir, split == "train" ? data::Train : data::Test, o);
  } catch (const IOError& e) {
    if (std::string(e.what()).find("file not found") != std::string::npos && dir != data::kFashionMnistDir) {
      MAGMADNN_THROW(IOError, e.what() << " (install the Debian package dataset-fashion-mnist, or pass --data DIR "
                                          "with the MNIST-format IDX files)");
    }
    throw;
  }
  const std::int64_t total = set.images.shape()[0];
  const std::int64_t n = limit > 0 ? std::min(limit, total) : total;
  Split s;
  s.labels.assign(set.classes.begin(), set.classes.begin() + n);
  if (n == total) {
    s.x = std::move(set.images);
    s.y = std::move(set.labels);
  } else {
    s.x = set.images.slice(0, n).to(HOST);
    s.y = set.labels.slice(0, n).to(HOST);
  }
  return s;
}

Split subset(const Split& s, const std::vector<std::int64_t>& rows) {
  Split out;
  out.x = data::take_rows(s.x, rows);
  out.y = data::take_rows(s.y, rows);
  out.labels.reserve(rows.size());
  for (auto r : rows) out.labels.push_back(s.labels.at(static_cast<std::size_t>(r)));
  return out;
}

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
    MAGMADNN_CHECK(a.shape.ndim() >= 2 && a.numel() / a.shape[0] == sample_size, IOError,
                   path << ": shape " << a.shape << " does not hold samples of " << sample_size
                        << " values each (the network's input is " << Shape(sample_shape) << ")");
    values.resize(static_cast<std::size_t>(a.numel()));
    a.convert(values.data(), kPixelScale);
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
    for (float& v : values) v = static_cast<float>(v * kPixelScale);
    shape[0] = rows.shape()[0];
  }
  MAGMADNN_CHECK(shape[0] > 0, IOError, path << ": no samples");
  return Tensor<float>::from_vector(Shape(shape), values);
}

std::vector<std::string> class_names(const std::string& dataset, std::int64_t classes) {
  if (dataset == "fashion-mnist" && classes == 10) {
    return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
  }
  // MNIST's names are its digits, which are also the indices.
  std::vector<std::string> names;
  for (std::int64_t c = 0; c < classes; ++c) names.push_back(std::to_string(c));
  return names;
}

}  // namespace magmadnn::run
