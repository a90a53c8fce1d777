/// @file csv.h
/// Reading numeric CSV files into tensors (the slides'
/// `io::read_csv_to_tensor(data, "mnist_data_set.csv")`).
///
/// A CSV file here is lines of numbers separated by one delimiter character.
/// Spaces and tabs around a cell are ignored, "\r\n" endings are accepted,
/// empty lines are skipped, and the file may be gzip-compressed. Quoted cells
/// are not supported (a data set of numbers does not need them). Optionally
/// the first line is a header to skip, and one column holds integer class
/// labels that go to a separate tensor, as indices or one-hot rows.
///
/// Guarantees: every row has the same number of cells, and every cell is a
/// number; otherwise IOError names the file, the line (1-based, counting the
/// header and empty lines), the column (1-based) and the offending cell. A
/// pre-shaped tensor is filled only when the whole file matches it; a
/// mismatch throws ShapeError naming the file's and the tensor's sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "magmadnn/core/types.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::io {

/// How a label column is returned.
enum class LabelEncoding { Index, OneHot };

struct CsvOptions {
  char delimiter = ',';
  /// Skip the first non-empty line.
  bool header = false;
  /// The column holding class labels (0-based; negative counts from the end).
  /// Unset: every column is data.
  std::optional<int> label_column;
  /// For read_csv_labeled: labels as {N} indices or {N, num_classes} one-hot.
  LabelEncoding labels = LabelEncoding::OneHot;
  /// For read_csv_labeled: number of classes; 0 means 1 + the largest label.
  std::int64_t num_classes = 0;
};

/// Fills `data`, whose shape is already set, from `path`. With a 2-D or
/// higher `data`, the file must have data.shape()[0] rows of
/// data.size() / data.shape()[0] values each (after dropping the label column
/// when opts.label_column is set); a 1-D `data` takes all values in order.
template <typename T>
void read_csv_to_tensor(Tensor<T>& data, const std::string& path, const CsvOptions& opts = {});

/// As above, and also fills `labels` from the label column (opts.label_column,
/// or column 0 when unset). `labels` of shape {N} or {N, 1} receives class
/// indices; {N, K} with K > 1 receives one-hot rows (labels must be in [0, K)).
template <typename T>
void read_csv_to_tensor(Tensor<T>& data, Tensor<T>& labels, const std::string& path, const CsvOptions& opts = {});

/// Reads the file into a new {rows, columns} tensor (the label column, if
/// any, is dropped).
template <typename T>
Tensor<T> read_csv(const std::string& path, const CsvOptions& opts = {}, memory_t mem = HOST);

/// Features and labels of a labelled CSV file.
template <typename T>
struct CsvData {
  Tensor<T> x;  ///< {rows, columns - 1}
  Tensor<T> y;  ///< {rows} indices or {rows, num_classes} one-hot (opts.labels)
};
/// Reads a labelled file (opts.label_column, or column 0 when unset).
/// Bounds on a one-hot tensor whose class count comes from the labels
/// (num_classes == 0): at most kCsvMaxClasses classes, and rows x classes at
/// most kCsvOneHotFixedElements + kCsvOneHotPerByte x (input bytes,
/// uncompressed). A label beyond them is an IOError naming the file, line,
/// column and value; pass num_classes or LabelEncoding::Index to go further.
inline constexpr std::int64_t kCsvMaxClasses = std::int64_t(1) << 24;
inline constexpr std::int64_t kCsvOneHotFixedElements = std::int64_t(1) << 22;
inline constexpr std::int64_t kCsvOneHotPerByte = 16;

template <typename T>
CsvData<T> read_csv_labeled(const std::string& path, const CsvOptions& opts = {}, memory_t mem = HOST);

}  // namespace magmadnn::io
