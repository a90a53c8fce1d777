#include "magmadnn/model/network_detail.h"

#include <cctype>
#include <map>

#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::model::detail {

namespace {
template <typename T>
std::int64_t argmax_row(const T* p, std::int64_t cols) {
  std::int64_t best = 0;
  for (std::int64_t c = 1; c < cols; ++c) {
    if (p[c] > p[best]) best = c;
  }
  return best;
}
}  // namespace

// The shape a batch of n rows of `data` takes in a placeholder of `pattern`.
// Normally data's own row shape; but when the placeholder's row shape is
// fully known and holds as many elements as a data row (v1 programs feed
// {N, 1, 28, 28} images to a {batch, 784} input), rows are taken in the
// placeholder's shape, as MagmaDNN v1 copied them flat.
static Shape batch_shape(const std::vector<std::int64_t>& pattern, const Shape& data, std::int64_t n) {
  std::vector<std::int64_t> dims = data.dims();
  dims[0] = n;
  if (pattern.size() < 2) return Shape(dims);
  std::int64_t want_row = 1, have_row = 1;
  for (std::size_t i = 1; i < pattern.size(); ++i) {
    if (pattern[i] < 0) return Shape(dims);
    want_row *= pattern[i];
  }
  for (std::size_t i = 1; i < dims.size(); ++i) have_row *= dims[i];
  if (want_row != have_row) return Shape(dims);
  std::vector<std::int64_t> out = pattern;
  out[0] = n;
  return Shape(out);
}

template <typename T>
void feed_placeholder(const op::Var<T>& ph, const data::Samples<T>& src, const std::int64_t* rows,
                      std::int64_t begin, std::int64_t n) {
  op::Variable<T>& v = *ph;
  const Shape want = batch_shape(v.pattern(), src.shape(), n);
  if (!v.has_value() || v.output().shape() != want) {
    // Rare (first batch, last partial batch): set_value checks the pattern
    // and sizes the placeholder's buffer; the rows are written below.
    Tensor<T> shaped(want, HOST);
    math::fill(shaped, T(0));
    v.set_value(shaped);
  }
  Tensor<T>& dst = v.value();  // value() marks the placeholder changed
  if (src.get_memory_type() == DEVICE) {
    // A data set in DEVICE memory (a tensor; bytes live on the host): copy
    // row by row on the device.
    const std::int64_t row = src.row_size();
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t r = rows ? rows[begin + i] : begin + i;
      Tensor<T> d = dst.slice(i, i + 1);
      d.copy_from(src.tensor(), r * row, row);
    }
    return;
  }
  if (dst.get_memory_type() == DEVICE) {
    // DEVICE memory has no host pointer: gather the rows on the host, then
    // copy the batch over in one transfer.
    Tensor<T> staging(dst.shape(), HOST);
    src.gather(rows, begin, n, staging.mutable_host_data());
    dst.copy_from(staging);
    return;
  }
  MAGMADNN_CHECK(dst.size() == n * src.row_size(), ShapeError,
                 "feed: placeholder " << dst.shape() << " does not hold " << n << " rows of " << src.row_size());
  src.gather(rows, begin, n, dst.mutable_host_data());  // promoted to T here when src holds bytes
}

template <typename T>
void feed_sample(const op::Var<T>& ph, const Tensor<T>& sample) {
  try {
    ph->set_value(sample);
  } catch (const ShapeError&) {
    // No batch axis: add one of size 1, then take the placeholder's row shape
    // if the element counts agree (set_value names the shapes if this fails too).
    std::vector<std::int64_t> dims = sample.shape().dims();
    dims.insert(dims.begin(), 1);
    ph->set_value(sample.view(batch_shape(ph->pattern(), Shape(dims), 1)));
  }
}

template <typename T>
std::int64_t count_correct(const Tensor<T>& pred, const Tensor<T>& y) {
  const std::int64_t rows = pred.shape()[0];
  const std::int64_t cols = rows > 0 ? pred.size() / rows : 0;
  MAGMADNN_CHECK(y.size() == pred.size(), ShapeError,
                 "accuracy: prediction " << pred.shape() << " and labels " << y.shape() << " differ in size");
  std::int64_t correct = 0;
  if (pred.on_device() || y.on_device()) {
    // On a GPU only the class indices come back to the host.
    const auto a = row_classes(pred), b = row_classes(y);
    for (std::int64_t r = 0; r < rows; ++r) correct += a[r] == b[r];
    return correct;
  }
  const T* p = pred.host_data();
  const T* t = y.host_data();
  for (std::int64_t r = 0; r < rows; ++r) {
    if (cols == 1) {
      correct += (p[r] >= T(0.5)) == (t[r] >= T(0.5));
    } else {
      correct += argmax_row(p + r * cols, cols) == argmax_row(t + r * cols, cols);
    }
  }
  return correct;
}

template <typename T>
std::vector<std::int64_t> row_classes(const Tensor<T>& pred) {
  const std::int64_t rows = pred.shape()[0];
  const std::int64_t cols = rows > 0 ? pred.size() / rows : 0;
  std::vector<std::int64_t> out(static_cast<std::size_t>(rows));
  if (cols == 1) {
    const auto v = pred.to_vector();
    for (std::int64_t r = 0; r < rows; ++r) out[r] = v[r] >= T(0.5) ? 1 : 0;
    return out;
  }
  if (pred.on_device()) return math::argmax(pred.view({rows, cols}), 1).to_vector();
  const T* p = pred.host_data();
  for (std::int64_t r = 0; r < rows; ++r) out[r] = argmax_row(p + r * cols, cols);
  return out;
}

std::string structural_prefix(std::size_t index, const std::string& type_name) {
  std::string kind;
  for (char c : type_name) kind += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::to_string(index) + "_" + kind + "/";
}

std::string name_key(const std::string& name) {
  const auto slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

std::string layer_key(const std::string& layer_name, const std::string& name) {
  const std::string prefix = layer_name + "/";
  if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) return name.substr(prefix.size());
  return name_key(name);
}

std::vector<std::string> unique_names(const std::vector<std::string>& names) {
  std::map<std::string, int> count;
  std::vector<std::string> out;
  out.reserve(names.size());
  for (const auto& n : names) {
    const int k = ++count[n];
    out.push_back(k == 1 ? n : n + "#" + std::to_string(k));
  }
  return out;
}

#define MAGMADNN_DETAIL_INSTANTIATE(T)                                                                    \
  template void feed_placeholder<T>(const op::Var<T>&, const data::Samples<T>&, const std::int64_t*,           \
                                    std::int64_t, std::int64_t);                                                       \
  template void feed_sample<T>(const op::Var<T>&, const Tensor<T>&);                                        \
  template std::int64_t count_correct<T>(const Tensor<T>&, const Tensor<T>&);                               \
  template std::vector<std::int64_t> row_classes<T>(const Tensor<T>&);
MAGMADNN_DETAIL_INSTANTIATE(float)
MAGMADNN_DETAIL_INSTANTIATE(double)
#undef MAGMADNN_DETAIL_INSTANTIATE

}  // namespace magmadnn::model::detail
