/// @file shape.h
/// Shape: the sizes of a tensor's axes, outermost first (row-major).
///
/// Sizes are 64-bit. A Shape converts from any list or vector of integers, so
/// MagmaDNN v1 code that passes `std::vector<unsigned int>` or `{n, rows, cols}`
/// of uint32_t keeps compiling. Axis arguments accept Python-style negative
/// values (-1 is the last axis).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <type_traits>
#include <vector>

namespace magmadnn {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) { validate(); }
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  Shape(const std::vector<I>& dims) : dims_(dims.begin(), dims.end()) { validate(); }  // NOLINT: implicit by design

  /// Number of axes.
  std::int64_t ndim() const noexcept { return static_cast<std::int64_t>(dims_.size()); }
  /// Product of the sizes (1 for a scalar shape).
  std::int64_t numel() const noexcept;
  /// Size of axis `axis`; negative counts from the end. Throws IndexError if out of range.
  std::int64_t operator[](std::int64_t axis) const;
  /// Mutable access to a size; same indexing rules.
  std::int64_t& at(std::int64_t axis);
  /// Maps a possibly negative axis to [0, ndim). Throws IndexError naming the shape.
  std::int64_t normalize_axis(std::int64_t axis) const;

  const std::vector<std::int64_t>& dims() const noexcept { return dims_; }
  std::vector<std::int64_t> strides() const;  ///< Row-major strides in elements.
  auto begin() const noexcept { return dims_.begin(); }
  auto end() const noexcept { return dims_.end(); }
  bool empty() const noexcept { return dims_.empty(); }

  /// Compatibility with MagmaDNN v1, whose shapes were std::vector<unsigned int>.
  operator std::vector<unsigned int>() const { return {dims_.begin(), dims_.end()}; }  // NOLINT
  operator std::vector<std::int64_t>() const { return dims_; }                         // NOLINT

  bool operator==(const Shape& o) const noexcept { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const noexcept { return dims_ != o.dims_; }

  /// "{2, 3, 4}".
  std::string to_string() const;

 private:
  void validate() const;
  std::vector<std::int64_t> dims_;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

/// The shape two operands broadcast to (NumPy rules). Throws ShapeError naming both.
Shape broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace magmadnn
