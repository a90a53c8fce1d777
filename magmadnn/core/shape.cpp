#include "magmadnn/core/shape.h"

#include <ostream>
#include <sstream>

#include "magmadnn/core/errors.h"

namespace magmadnn {

void Shape::validate() const {
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    MAGMADNN_CHECK(dims_[i] >= 0, ValueError, "shape " << to_string() << " has a negative size at axis " << i);
  }
}

std::int64_t Shape::numel() const noexcept {
  std::int64_t n = 1;
  for (auto d : dims_) n *= d;
  return n;
}

std::int64_t Shape::normalize_axis(std::int64_t axis) const {
  const std::int64_t n = ndim();
  const std::int64_t a = axis < 0 ? axis + n : axis;
  MAGMADNN_CHECK(a >= 0 && a < n, IndexError, "axis " << axis << " is out of range for shape " << to_string());
  return a;
}

std::int64_t Shape::operator[](std::int64_t axis) const { return dims_[normalize_axis(axis)]; }
std::int64_t& Shape::at(std::int64_t axis) { return dims_[normalize_axis(axis)]; }

std::vector<std::int64_t> Shape::strides() const {
  std::vector<std::int64_t> s(dims_.size(), 1);
  for (std::int64_t i = ndim() - 2; i >= 0; --i) s[i] = s[i + 1] * dims_[i + 1];
  return s;
}

std::string Shape::to_string() const {
  std::ostringstream os;
  os << '{';
  for (std::size_t i = 0; i < dims_.size(); ++i) os << (i ? ", " : "") << dims_[i];
  os << '}';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.to_string(); }

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const std::int64_t n = std::max(a.ndim(), b.ndim());
  std::vector<std::int64_t> out(n);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t ia = a.ndim() - n + i, ib = b.ndim() - n + i;
    const std::int64_t da = ia >= 0 ? a.dims()[ia] : 1, db = ib >= 0 ? b.dims()[ib] : 1;
    MAGMADNN_CHECK(da == db || da == 1 || db == 1, ShapeError,
                   "shapes " << a << " and " << b << " cannot be broadcast together (axis " << i << ": " << da
                             << " vs " << db << ")");
    out[i] = da == 1 ? db : da;
  }
  return Shape(out);
}

}  // namespace magmadnn
