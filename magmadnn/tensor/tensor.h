/// @file tensor.h
/// Tensor<T>: an n-dimensional, row-major array of T over a MemoryManager
/// (paper §2.2).
///
/// Value semantics: copying a Tensor copies its data (into the same kind of
/// memory); moving is cheap. Views (view(), slice()) share storage with the
/// tensor they come from, and writes through either are visible in both.
/// The default memory is MANAGED on device 0, as in the paper.
///
/// Indices may be negative (Python style: -1 is the last element of an axis).
/// Out-of-range indices raise IndexError naming the index and the shape;
/// mismatched shapes raise ShapeError naming both shapes.
///
/// T is float, double, half, bfloat16, int32_t or int64_t. Arithmetic (see
/// tensor/math.h) is defined for float and double; half and bfloat16 are
/// storage types with conversions (cast()); the GEMMs of mixed precision
/// read bfloat16 or half tensors (math::matmul_mixed).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/core/shape.h"
#include "magmadnn/core/types.h"
#include "magmadnn/memory/memory_manager.h"
#include "magmadnn/tensor/filler.h"

namespace magmadnn {

template <typename T>
class Tensor {
 public:
  /// An empty tensor: no storage, shape {0}.
  Tensor();
  /// Allocates `shape` in `mem` memory on `device`; contents undefined.
  explicit Tensor(const Shape& shape, memory_t mem = MANAGED, device_t device = 0);
  /// Allocates and fills.
  Tensor(const Shape& shape, const tensor_filler_t<T>& filler, memory_t mem = MANAGED, device_t device = 0);
  /// A tensor holding `values` (row-major), which must have shape.numel() elements.
  static Tensor from_vector(const Shape& shape, const std::vector<T>& values, memory_t mem = MANAGED,
                            device_t device = 0);

  /// A HOST tensor over memory that belongs to someone else (a NumPy array,
  /// a DLPack producer): `shape.numel()` elements, row-major and contiguous,
  /// at `data`, which must stay valid while `keep_alive` is held. No copy:
  /// writes through either side are seen by the other. The storage holds
  /// `keep_alive` and releases it when the last tensor or view over it goes,
  /// never freeing `data` itself. Deep copies (the copy constructor) own
  /// their memory as usual. Requires `data` aligned for T (ValueError).
  static Tensor borrow_host(T* data, const Shape& shape, std::shared_ptr<void> keep_alive);

  Tensor(const Tensor& other);             ///< deep copy
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(const Tensor& other);  ///< deep copy (this takes other's shape and memory type)
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor() = default;

  // -- shape ------------------------------------------------------------------
  const Shape& shape() const noexcept { return shape_; }
  /// MagmaDNN v1 spelling of shape().
  const Shape& get_shape() const noexcept { return shape_; }
  /// Size of one axis; negative counts from the end.
  std::int64_t get_shape(std::int64_t axis) const { return shape_[axis]; }
  std::int64_t ndim() const noexcept { return shape_.ndim(); }
  std::int64_t size() const noexcept { return numel_; }
  std::int64_t get_size() const noexcept { return numel_; }
  bool empty() const noexcept { return numel_ == 0; }

  memory_t get_memory_type() const noexcept { return mem_; }
  device_t get_device_id() const noexcept { return device_; }
  /// True when arithmetic on this tensor runs on a GPU.
  bool on_device() const noexcept;
  static constexpr dtype get_dtype() noexcept { return dtype_v<T>; }

  // -- elements (slow on a GPU; for set-up and inspection) ---------------------
  T get(std::int64_t flat_index) const;
  T get(const std::vector<std::int64_t>& index) const;
  void set(std::int64_t flat_index, T value);
  void set(const std::vector<std::int64_t>& index, T value);
  /// Flat offset of a multi-index (negative entries allowed); throws IndexError.
  std::int64_t flat_index(const std::vector<std::int64_t>& index) const;

  // -- views and shape changes -------------------------------------------------
  /// A tensor with another shape over the same storage. Throws ShapeError if
  /// the sizes differ.
  Tensor view(const Shape& shape) const { return view_dims(shape.dims()); }
  /// As above; one axis may be -1 (inferred), e.g. `t.view({-1, 784})`.
  Tensor view(std::initializer_list<std::int64_t> dims) const { return view_dims(dims); }
  Tensor view_dims(std::vector<std::int64_t> dims) const;
  /// Rows [begin, end) of axis 0, sharing storage (a batch of a data set).
  Tensor slice(std::int64_t begin, std::int64_t end) const;
  /// In-place shape changes (MagmaDNN v1): same storage, new shape.
  void reshape(const Shape& shape);
  void reshape(std::initializer_list<std::int64_t> dims) { *this = view_dims(dims); }
  void squeeze();                        ///< removes every axis of size 1
  void squeeze(std::int64_t axis);       ///< removes `axis`, which must have size 1
  void unsqueeze(std::int64_t axis);     ///< inserts an axis of size 1 before `axis` (-1: at the end)
  bool shares_storage_with(const Tensor& other) const noexcept {
    return storage_ && storage_ == other.storage_;
  }

  // -- raw data ---------------------------------------------------------------------
  /// Compute-side pointers (device memory when on_device()).
  const T* data() const;
  T* mutable_data();
  const T* host_data() const;
  T* mutable_host_data();
  const T* device_data() const;
  T* mutable_device_data();
  /// MagmaDNN v1: writable compute-side pointer.
  T* get_ptr() { return mutable_data(); }
  /// The storage; a view starts at element offset() of it.
  MemoryManager<T>* get_memory_manager() const noexcept { return storage_.get(); }
  std::int64_t offset() const noexcept { return offset_; }
  /// The storage's write stamp (MemoryManager::write_stamp): equal stamps
  /// mean unchanged contents. 0 for a tensor without storage.
  std::uint64_t write_stamp() const noexcept { return storage_ ? storage_->write_stamp() : 0; }

  // -- copies and conversions ---------------------------------------------------------
  /// Copies src's elements (any memory types); sizes must match.
  void copy_from(const Tensor& src);
  /// MagmaDNN v1: copies src's flat elements [begin, begin + count) into this[0, count).
  void copy_from(const Tensor& src, std::int64_t begin, std::int64_t count);
  /// Copies host values into this tensor (size must match).
  void copy_from_host(const T* values, std::int64_t count);
  /// A deep copy in other memory.
  Tensor to(memory_t mem, device_t device = 0) const;
  /// All elements, row-major, on the host.
  std::vector<T> to_vector() const;
  /// A converted copy (float <-> double <-> half <-> bfloat16) in the same memory.
  template <typename U>
  Tensor<U> cast() const;

  /// Re-initialises the contents.
  void fill(const tensor_filler_t<T>& filler);
  /// MANAGED: make the host (or device) side current now.
  void sync(bool device_to_host = true);
  /// Starts moving the data towards the host or the device.
  void prefetch(bool to_host);

  /// Shape, memory type and values (at most `edge` per axis end, NumPy style).
  std::string to_string(int edge = 3) const;

 private:
  Tensor(std::shared_ptr<MemoryManager<T>> storage, std::int64_t offset, Shape shape, memory_t mem,
         device_t device);
  void check_storage(const char* what) const;

  std::shared_ptr<MemoryManager<T>> storage_;
  std::int64_t offset_ = 0;
  Shape shape_{0};
  std::int64_t numel_ = 0;
  memory_t mem_ = MANAGED;
  device_t device_ = 0;
};

template <typename T>
std::ostream& operator<<(std::ostream& os, const Tensor<T>& t);

// MagmaDNN v1 typedefs.
using tensorf_t = Tensor<float>;
using tensord_t = Tensor<double>;

}  // namespace magmadnn
