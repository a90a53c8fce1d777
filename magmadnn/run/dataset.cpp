#include "magmadnn/run/dataset.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "magmadnn/core/errors.h"
#include "magmadnn/data/holdout.h"
#include "magmadnn/data/transforms.h"
#include "magmadnn/io/idx.h"

namespace magmadnn::run {
namespace fs = std::filesystem;

namespace {

constexpr double kPixelScale = 1.0 / 255.0;

// `stem` with or without .gz, whichever exists.
std::string find_file(const std::string& dir, const std::string& stem) {
  for (const std::string& name : {stem + ".gz", stem}) {
    const fs::path p = fs::path(dir) / name;
    if (fs::exists(p)) return p.string();
  }
  MAGMADNN_THROW(IOError, "no " << stem << "[.gz] in " << dir
                                << " (install the Debian package dataset-fashion-mnist, or pass --data DIR with the "
                                   "MNIST-format IDX files)");
}

}  // namespace

Split load_split(const std::string& dir, const std::string& split, std::int64_t limit, std::int64_t classes) {
  MAGMADNN_CHECK(split == "train" || split == "test", ValueError, "unknown split \"" << split << "\"");
  const std::string prefix = split == "train" ? "train" : "t10k";
  const std::string images_path = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");

  const io::IdxArray images = io::read_idx(images_path);
  const io::IdxArray labels = io::read_idx(labels_path);
  MAGMADNN_CHECK(images.shape.ndim() == 3, IOError,
                 images_path << ": expected images {N, H, W}, got shape " << images.shape);
  MAGMADNN_CHECK(labels.shape.ndim() == 1, IOError, labels_path << ": expected labels {N}, got shape " << labels.shape);
  MAGMADNN_CHECK(images.shape[0] == labels.shape[0], IOError,
                 images_path << " holds " << images.shape[0] << " images but " << labels_path << " holds "
                             << labels.shape[0] << " labels");
  const std::int64_t total = images.shape[0], h = images.shape[1], w = images.shape[2];
  const std::int64_t n = limit > 0 ? std::min(limit, total) : total;

  std::vector<float> pixels(static_cast<std::size_t>(total * h * w));
  images.convert(pixels.data(), kPixelScale);
  pixels.resize(static_cast<std::size_t>(n * h * w));
  std::vector<double> raw(static_cast<std::size_t>(total));
  labels.convert(raw.data());

  Split s;
  s.labels.assign(raw.begin(), raw.begin() + n);
  const std::int64_t max_label = s.labels.empty() ? 0 : *std::max_element(s.labels.begin(), s.labels.end());
  if (classes <= 0) classes = max_label + 1;
  for (std::int64_t i = 0; i < n; ++i) {
    MAGMADNN_CHECK(s.labels[i] >= 0 && s.labels[i] < classes, IOError,
                   labels_path << ": label " << s.labels[i] << " of sample " << i << " is outside [0, " << classes
                               << ")");
  }
  s.x = Tensor<float>::from_vector({n, 1, h, w}, pixels);
  s.y = data::one_hot<float>(s.labels, classes);
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
    std::ifstream in(path);
    std::string line;
    for (std::int64_t lineno = 1; std::getline(in, line); ++lineno) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      std::vector<float> row;
      std::stringstream ls(line);
      bool numeric = true;
      for (std::string cell; std::getline(ls, cell, ',');) {
        std::size_t used = 0;
        try {
          row.push_back(static_cast<float>(std::stod(cell, &used) * kPixelScale));
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || cell.find_first_not_of(" \t", used) != std::string::npos) {
          numeric = false;
          break;
        }
      }
      if (!numeric && lineno == 1) continue;  // a header line
      MAGMADNN_CHECK(numeric, IOError, path << ":" << lineno << ": not a row of numbers: \"" << line << "\"");
      MAGMADNN_CHECK(static_cast<std::int64_t>(row.size()) == sample_size, IOError,
                     path << ":" << lineno << ": expected " << sample_size << " values (input "
                          << Shape(sample_shape) << "), got " << row.size());
      values.insert(values.end(), row.begin(), row.end());
      ++shape[0];
    }
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
