/// @file samples.h
/// Samples<T>: the inputs of a data set as the model reads them, in T, while
/// memory holds them in the type they came in (dMath's lazy promotion).
///
/// Three kinds of storage:
///  - a Tensor<T> (what users build in code; any memory type): read as is;
///  - bytes, one uint8 per value, with the affine map of the file's pixel
///    scale (value = byte x scale + shift, computed in double and rounded to
///    T once): 1 byte a pixel instead of 4 (float) or 8 (double). MNIST's
///    and CIFAR's loaders keep their images so (load_mnist_source);
///  - none: values computed row by row when a batch is assembled, by a
///    function of the sample's index (synthetic data, run/dataset.h), so a
///    data set of any size costs no memory.
///  - a RowSource: an object that computes whole batches of rows from the
///    samples' ids, and may draw from a per-sample random generator when one
///    is given (an image folder decodes and augments its files so,
///    data/image_folder.h).
/// Whoever assembles a batch (the DataLoader, NeuralNetwork's feed) calls
/// gather(), which promotes the batch's rows only. A byte b always becomes
/// the same T: the 256 values are computed once with the loaders' own
/// formula, and gather either reads them from that table or uses an
/// arithmetic form in T found to give all 256 exactly (x 1/255 in double, / 255
/// in float), so a batch is bit-identical to the one cut from the data set
/// converted to T when it was read (load_mnist).
///
/// A Samples is a cheap handle: copies share the storage, and a Tensor<T>
/// converts to one implicitly (a view, no copy), so every function that takes
/// `const Samples<T>&` also takes a tensor.
///
/// Requires: byte storage lives on the host; its contents do not change
/// (nothing in the library writes them). Guarantees: shape(), rows() and
/// slice()/take() behave as the Tensor<T> of the promoted values would.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "magmadnn/data/sample_rng.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::data {

/// Rows computed on demand, a batch at a time (Samples::from_source).
/// Requires of implementations: fill is thread-safe (several DataLoader
/// workers may call it at once) and row i of its output depends only on
/// ids[i] and on rngs[i]'s draws, never on the other rows, on threads or on
/// timing.
template <typename T>
class RowSource {
 public:
  virtual ~RowSource() = default;
  /// Writes sample ids[i] (0 .. the source's sample count - 1) to
  /// dst + i x row_size for i in [0, count). `rngs`: null, or count
  /// generators, one per row: a source with a random form (training
  /// augmentation) takes it only when given them, and draws from rngs[i]
  /// for row i; null asks for the deterministic form (evaluation).
  virtual void fill(const std::int64_t* ids, std::int64_t count, T* dst, SampleRng* rngs) const = 0;
};

/// value = byte x scale + shift.
struct ByteScale {
  double scale = 1.0;
  double shift = 0.0;
  bool operator==(const ByteScale&) const = default;
};

template <typename T>
class Samples {
 public:
  /// No samples (shape {}).
  Samples();
  /// A tensor's values as they are (a view: shares storage).
  Samples(const Tensor<T>& t);  // NOLINT(google-explicit-constructor): tensors pass where samples are taken
  /// Bytes {N, ...} = `shape`, read as byte x scale + shift. `bytes` holds
  /// at least shape.numel() values (ShapeError otherwise).
  static Samples from_bytes(const Shape& shape, std::shared_ptr<const std::vector<std::uint8_t>> bytes,
                            ByteScale scale);
  /// Writes the row_size() values of sample `id` (0 .. shape[0]-1) to `dst`.
  /// Called from several threads at once: it must be a pure function of id.
  using RowFill = std::function<void(std::int64_t id, T* dst)>;
  /// Samples {N, ...} = `shape` that are computed, never stored: gather()
  /// calls `fill` for each row it writes.
  static Samples generated(const Shape& shape, std::shared_ptr<const RowFill> fill);
  /// Samples {N, ...} = `shape` computed by `source` a batch at a time
  /// (is_generated() is true for them too).
  static Samples from_source(const Shape& shape, std::shared_ptr<const RowSource<T>> source);
  /// The source of from_source samples (null otherwise).
  const std::shared_ptr<const RowSource<T>>& source() const noexcept { return source_; }

  const Shape& shape() const noexcept { return shape_; }
  std::int64_t ndim() const noexcept { return shape_.ndim(); }
  /// Samples on axis 0.
  std::int64_t rows() const { return shape_.ndim() > 0 ? shape_[0] : 0; }
  /// Values per sample.
  std::int64_t row_size() const;
  /// Values in all (as Tensor::size).
  std::int64_t size() const noexcept { return shape_.numel(); }

  /// True for byte storage.
  bool is_bytes() const noexcept { return bytes_ != nullptr; }
  /// True for computed samples (generated()).
  bool is_generated() const noexcept { return fill_ != nullptr || source_ != nullptr; }
  /// The tensor of tensor storage (ValueError for bytes and computed samples).
  const Tensor<T>& tensor() const;
  /// The bytes of the rows this handle spans, {rows(), ...} (ValueError for a tensor).
  const std::uint8_t* byte_data() const;
  ByteScale byte_scale() const noexcept { return scale_; }
  /// "uint8", "generated", or the tensor's element type ("float32", "float64").
  const char* storage_type() const noexcept;
  /// Bytes of memory the values of these rows occupy.
  std::uint64_t storage_bytes() const noexcept;
  /// Memory of the storage: HOST for bytes and computed samples, the tensor's otherwise.
  memory_t get_memory_type() const noexcept;

  /// Writes rows rows[begin .. begin+count) (rows == nullptr: begin ..
  /// begin+count in order) promoted to T into `dst`, host memory holding
  /// count x row_size() values. Requires host-readable storage
  /// (NotSupportedError for a tensor in DEVICE memory); IndexError for a row
  /// outside [0, rows()).
  /// `rngs`: null, or `count` generators, one per row written, passed on to
  /// a RowSource (which may draw from them: data augmentation); other
  /// storage ignores them.
  void gather(const std::int64_t* rows, std::int64_t begin, std::int64_t count, T* dst,
              SampleRng* rngs = nullptr) const;

  /// Rows [begin, end), sharing storage (IndexError outside [0, rows()]).
  Samples slice(std::int64_t begin, std::int64_t end) const;
  /// The rows `rows`, in that order, as new storage of the same kind (bytes
  /// stay bytes; a tensor becomes a host tensor).
  Samples take(const std::vector<std::int64_t>& rows) const;
  /// Every value promoted to T, in a new tensor in `mem`.
  Tensor<T> to_tensor(memory_t mem = HOST) const;

 private:
  Shape shape_;
  std::shared_ptr<const Tensor<T>> tensor_;  // shared: Tensor's copy is deep
  std::shared_ptr<const std::vector<std::uint8_t>> bytes_;
  std::int64_t offset_ = 0;  // first byte of row 0 in *bytes_
  ByteScale scale_;
  std::shared_ptr<const std::array<T, 256>> table_;  // byte -> T
  // Computed samples: row r of this handle is sample ids_[offset_ + r], or
  // offset_ + r without ids_ (take() makes ids_, slice() moves offset_).
  std::shared_ptr<const RowFill> fill_;
  std::shared_ptr<const RowSource<T>> source_;
  std::shared_ptr<const std::vector<std::int64_t>> ids_;
  // How gather promotes: by the table, or by arithmetic in T that gives the
  // table's 256 values exactly (checked in from_bytes), which vectorises.
  enum class Promotion { Table, Multiply, Divide } promotion_ = Promotion::Table;
  T factor_ = T(1), shift_t_ = T(0);
};

}  // namespace magmadnn::data
