#include "magmadnn/io/csv.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "magmadnn/core/errors.h"
#include "magmadnn/io/byte_reader.h"

namespace magmadnn::io {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_number(std::string_view cell, double& v) {
  if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);  // from_chars refuses a leading '+'
  if (cell.empty()) return false;
  const auto r = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  return r.ec == std::errc() && r.ptr == cell.data() + cell.size();
}

/// One data row as the scanner hands it out.
struct Row {
  std::int64_t index = 0;  // 0-based data row
  std::int64_t line = 0;   // 1-based line in the file
  const std::vector<double>* values = nullptr;
  std::int64_t label = -1;  // -1: no label column
  std::int64_t label_column = 0;  // 1-based column of the label
};

// Reads `path` row by row, checking that every row has the same number of
// cells and that each is a number. `label_required` makes the label column
// default to 0. Returns the number of data rows; `cols` receives the data
// columns per row.
template <typename Sink>
std::int64_t scan_csv(const std::string& path, const CsvOptions& opts, bool label_required, std::int64_t& cols,
                      Sink&& sink, std::int64_t* stream_bytes = nullptr) {
  std::optional<int> label_col = opts.label_column;
  if (!label_col && label_required) label_col = 0;
  ByteReader in(path);
  if (stream_bytes) *stream_bytes = in.size();
  std::string line;
  std::vector<std::string_view> cells;
  std::vector<double> values;
  std::int64_t line_no = 0, rows = 0, fields = -1, first_line = 0;
  bool header_pending = opts.header;
  int label_idx = -1;
  while (in.read_line(line)) {
    ++line_no;
    if (trim(line).empty()) continue;
    if (header_pending) {
      header_pending = false;
      continue;
    }
    cells.clear();
    std::string_view rest(line);
    for (;;) {
      const std::size_t pos = rest.find(opts.delimiter);
      cells.push_back(trim(rest.substr(0, pos)));
      if (pos == std::string_view::npos) break;
      rest.remove_prefix(pos + 1);
    }
    const auto n = static_cast<std::int64_t>(cells.size());
    if (fields < 0) {
      fields = n;
      first_line = line_no;
      if (label_col) {
        label_idx = *label_col < 0 ? static_cast<int>(n) + *label_col : *label_col;
        MAGMADNN_CHECK(label_idx >= 0 && label_idx < n, ValueError,
                       path << ":" << line_no << ": label column " << *label_col << " does not exist in a row of "
                            << n << " columns");
      }
    }
    MAGMADNN_CHECK(n == fields, IOError,
                   path << ":" << line_no << ": " << n << " cells, but line " << first_line << " has " << fields
                        << " (delimiter '" << opts.delimiter << "')");
    values.clear();
    std::int64_t label = -1;
    for (std::int64_t c = 0; c < n; ++c) {
      double v = 0;
      MAGMADNN_CHECK(parse_number(cells[c], v), IOError,
                     path << ":" << line_no << ", column " << c + 1 << ": cell '" << cells[c]
                          << "' is not a number");
      if (c == label_idx) {
        MAGMADNN_CHECK(v >= 0 && v == std::floor(v) && v < 9.0e15, IOError,
                       path << ":" << line_no << ", column " << c + 1 << ": label '" << cells[c]
                            << "' is not a non-negative integer");
        label = static_cast<std::int64_t>(v);
      } else {
        values.push_back(v);
      }
    }
    sink(Row{rows, line_no, &values, label, label_idx + 1});
    ++rows;
  }
  cols = fields < 0 ? 0 : fields - (label_idx >= 0 ? 1 : 0);
  return rows;
}

template <typename T>
void fill_label(T* out, std::int64_t row, std::int64_t label, std::int64_t classes, bool one_hot,
                const std::string& path, std::int64_t line) {
  if (!one_hot) {
    out[row] = static_cast<T>(label);
    return;
  }
  MAGMADNN_CHECK(label < classes, IOError,
                 path << ":" << line << ": label " << label << " is outside [0, " << classes << ")");
  T* r = out + row * classes;
  std::fill(r, r + classes, T(0));
  r[label] = T(1);
}

template <typename T>
Tensor<T> to_memory(Tensor<T>&& host, memory_t mem) {
  return mem == HOST ? std::move(host) : host.to(mem);
}

// Fills pre-shaped tensors: stages the values on the host and writes the
// destination only once the whole file has matched its shape.
template <typename T>
void fill_preshaped(Tensor<T>& data, Tensor<T>* labels, const std::string& path, const CsvOptions& opts) {
  const std::int64_t expect_rows = data.ndim() >= 2 ? data.shape()[0] : -1;
  const std::int64_t expect_cols = data.ndim() >= 2 && expect_rows > 0 ? data.size() / expect_rows : -1;
  std::int64_t classes = 1;
  bool one_hot = false;
  if (labels) {
    MAGMADNN_CHECK(labels->ndim() >= 1 && labels->ndim() <= 2, ShapeError,
                   "read_csv_to_tensor(" << path << "): labels must be {N}, {N, 1} or {N, K}, got "
                                         << labels->shape());
    classes = labels->ndim() == 2 ? labels->shape()[1] : 1;
    one_hot = classes > 1;
  }
  std::vector<T> x(static_cast<std::size_t>(data.size()));
  std::vector<T> y(labels ? static_cast<std::size_t>(labels->size()) : 0);
  const std::int64_t label_rows = labels ? labels->shape()[0] : 0;
  std::int64_t cols = 0, written = 0;
  const std::int64_t rows = scan_csv(path, opts, labels != nullptr, cols, [&](const Row& r) {
    const auto n = static_cast<std::int64_t>(r.values->size());
    if (expect_rows >= 0) {
      MAGMADNN_CHECK(r.index < expect_rows, ShapeError,
                     path << ":" << r.line << ": more rows than the tensor's " << expect_rows << " (shape "
                          << data.shape() << ")");
      MAGMADNN_CHECK(n == expect_cols, ShapeError,
                     path << ":" << r.line << ": " << n << " data values per row, but the tensor of shape "
                          << data.shape() << " needs " << expect_cols);
    } else {
      MAGMADNN_CHECK(written + n <= data.size(), ShapeError,
                     path << ":" << r.line << ": more values than the tensor's " << data.size() << " (shape "
                          << data.shape() << ")");
    }
    std::copy(r.values->begin(), r.values->end(), x.begin() + written);
    written += n;
    if (labels) {
      MAGMADNN_CHECK(r.index < label_rows, ShapeError,
                     path << ":" << r.line << ": more rows than the labels tensor's " << label_rows);
      fill_label(y.data(), r.index, r.label, classes, one_hot, path, r.line);
    }
  });
  MAGMADNN_CHECK(written == data.size(), ShapeError,
                 path << ": " << rows << " rows of " << cols << " data values (" << written
                      << " in all), but the tensor of shape " << data.shape() << " holds " << data.size());
  if (labels)
    MAGMADNN_CHECK(rows == label_rows, ShapeError,
                   path << ": " << rows << " rows, but the labels tensor of shape " << labels->shape() << " has "
                        << label_rows);
  data.copy_from_host(x.data(), data.size());
  if (labels) labels->copy_from_host(y.data(), labels->size());
}

}  // namespace

template <typename T>
void read_csv_to_tensor(Tensor<T>& data, const std::string& path, const CsvOptions& opts) {
  fill_preshaped<T>(data, nullptr, path, opts);
}

template <typename T>
void read_csv_to_tensor(Tensor<T>& data, Tensor<T>& labels, const std::string& path, const CsvOptions& opts) {
  fill_preshaped<T>(data, &labels, path, opts);
}

template <typename T>
Tensor<T> read_csv(const std::string& path, const CsvOptions& opts, memory_t mem) {
  std::vector<T> x;
  std::int64_t cols = 0;
  const std::int64_t rows =
      scan_csv(path, opts, false, cols, [&](const Row& r) { x.insert(x.end(), r.values->begin(), r.values->end()); });
  MAGMADNN_CHECK(rows > 0, IOError, path << ": no data rows");
  return to_memory(Tensor<T>::from_vector({rows, cols}, x, HOST), mem);
}

template <typename T>
CsvData<T> read_csv_labeled(const std::string& path, const CsvOptions& opts, memory_t mem) {
  std::vector<T> x;
  std::vector<std::int64_t> labels;
  std::vector<std::int64_t> lines;
  std::int64_t cols = 0, stream_bytes = 0;
  Row largest;  // the row with the largest label: named if that label is refused
  const std::int64_t rows = scan_csv(
      path, opts, true, cols,
      [&](const Row& r) {
        x.insert(x.end(), r.values->begin(), r.values->end());
        labels.push_back(r.label);
        lines.push_back(r.line);
        if (r.index == 0 || r.label > largest.label) largest = r;
      },
      &stream_bytes);
  MAGMADNN_CHECK(rows > 0, IOError, path << ": no data rows");
  CsvData<T> out;
  out.x = to_memory(Tensor<T>::from_vector({rows, cols}, x, HOST), mem);
  if (opts.labels == LabelEncoding::Index) {
    out.y = to_memory(Tensor<T>::from_vector({rows}, std::vector<T>(labels.begin(), labels.end()), HOST), mem);
    return out;
  }
  std::int64_t classes = opts.num_classes;
  if (classes <= 0) {
    // The class count comes from the file: a stray huge label must not turn
    // into a rows x classes allocation (2^52 classes overflow the product; a
    // million of them on a few thousand rows is gigabytes for a tiny file).
    classes = largest.label + 1;
    const std::int64_t elements_cap = kCsvOneHotFixedElements + kCsvOneHotPerByte * stream_bytes;
    const bool too_many = classes > kCsvMaxClasses || rows > elements_cap / classes;
    MAGMADNN_CHECK(!too_many, IOError,
                   path << ":" << largest.line << ", column " << largest.label_column << ": label " << largest.label
                        << " implies " << classes << " classes, so a one-hot tensor of " << rows << " x " << classes
                        << (rows <= std::numeric_limits<std::int64_t>::max() / classes
                                ? " = " + std::to_string(rows * classes)
                                : std::string(" (overflows int64)"))
                        << " elements for a file of " << stream_bytes << " bytes; at most " << kCsvMaxClasses
                        << " classes and " << elements_cap << " one-hot elements (" << kCsvOneHotFixedElements
                        << " + " << kCsvOneHotPerByte << " per input byte) are accepted: set num_classes or "
                        << "use LabelEncoding::Index");
  }
  MAGMADNN_CHECK(rows <= std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(sizeof(T)) / classes,
                 IOError,
                 path << ": " << rows << " rows x " << classes << " classes overflow the size of a one-hot tensor");
  std::vector<T> y(static_cast<std::size_t>(rows * classes));
  for (std::int64_t i = 0; i < rows; ++i) fill_label(y.data(), i, labels[i], classes, true, path, lines[i]);
  out.y = to_memory(Tensor<T>::from_vector({rows, classes}, y, HOST), mem);
  return out;
}

#define MAGMADNN_CSV_INSTANTIATE(T)                                                                      \
  template void read_csv_to_tensor<T>(Tensor<T>&, const std::string&, const CsvOptions&);                \
  template void read_csv_to_tensor<T>(Tensor<T>&, Tensor<T>&, const std::string&, const CsvOptions&);    \
  template Tensor<T> read_csv<T>(const std::string&, const CsvOptions&, memory_t);                       \
  template CsvData<T> read_csv_labeled<T>(const std::string&, const CsvOptions&, memory_t);
MAGMADNN_CSV_INSTANTIATE(float)
MAGMADNN_CSV_INSTANTIATE(double)
#undef MAGMADNN_CSV_INSTANTIATE

}  // namespace magmadnn::io
