#include "magmadnn/data/samples.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::data {

namespace {

bool host_readable(memory_t m) { return m == HOST || m == MANAGED || m == CUDA_MANAGED; }

// The loaders' conversion, in one place: through double, rounded to T once.
// A table of the 256 results makes promotion a lookup, and equal to the
// conversion at load time by construction.
template <typename T>
std::shared_ptr<const std::array<T, 256>> promotion_table(ByteScale s) {
  auto t = std::make_shared<std::array<T, 256>>();
  for (int b = 0; b < 256; ++b) (*t)[b] = static_cast<T>(static_cast<double>(b) * s.scale + s.shift);
  return t;
}

// The rows of a shuffled epoch are scattered over the data set, so the copy
// waits on memory latency, not bandwidth: two threads keep twice the misses
// in flight (a 100-row Fashion-MNIST batch of float: 0.049 -> 0.025 ms), so
// a batch of 64 KiB or more is split over threads. Prefetching the next
// batch's rows during the step was tried and lost: issuing the 4900
// prefetches cost about what they saved.
template <typename F>
void for_rows(std::int64_t count, std::int64_t bytes_per_row, F&& f) {
  cpu::parallel_for(count, count * bytes_per_row >= (std::int64_t{1} << 16), f);
}

// The arithmetic forms gather may use instead of the table. The sum of a
// product is used only where the product is exact (a power-of-two factor) or
// nothing is added, so contracting it into an FMA cannot change a value.
template <typename T>
T by_multiply(std::uint8_t b, T factor, T shift) { return static_cast<T>(b) * factor + shift; }
template <typename T>
T by_divide(std::uint8_t b, T divisor, T shift) { return static_cast<T>(b) / divisor + shift; }

template <typename T, typename F>
bool gives_table(const std::array<T, 256>& table, F&& f) {
  for (int b = 0; b < 256; ++b) {
    if (!(f(static_cast<std::uint8_t>(b)) == table[b])) return false;
  }
  return true;
}

bool power_of_two(double x) {
  int e = 0;
  return x > 0 && std::frexp(x, &e) == 0.5;
}

}  // namespace

template <typename T>
Samples<T>::Samples() : tensor_(std::make_shared<const Tensor<T>>()) {}

template <typename T>
Samples<T>::Samples(const Tensor<T>& t)
    : shape_(t.shape()), tensor_(std::make_shared<const Tensor<T>>(t.view(t.shape()))) {}

template <typename T>
Samples<T> Samples<T>::from_bytes(const Shape& shape, std::shared_ptr<const std::vector<std::uint8_t>> bytes,
                                  ByteScale scale) {
  MAGMADNN_CHECK(bytes != nullptr && static_cast<std::int64_t>(bytes->size()) >= shape.numel(), ShapeError,
                 "Samples::from_bytes: " << (bytes ? bytes->size() : 0) << " bytes cannot hold samples of shape "
                                         << shape);
  MAGMADNN_CHECK(shape.ndim() >= 1, ShapeError, "Samples::from_bytes: a scalar shape has no sample axis");
  Samples s;
  s.shape_ = shape;
  s.tensor_.reset();
  s.bytes_ = std::move(bytes);
  s.scale_ = scale;
  s.table_ = promotion_table<T>(scale);
  const auto factor = static_cast<T>(scale.scale), divisor = static_cast<T>(1.0 / scale.scale),
             shift = static_cast<T>(scale.shift);
  if ((scale.shift == 0.0 || power_of_two(scale.scale)) &&
      gives_table(*s.table_, [&](std::uint8_t b) { return by_multiply(b, factor, shift); })) {
    s.promotion_ = Promotion::Multiply;
    s.factor_ = factor;
  } else if (std::isfinite(1.0 / scale.scale) &&
             gives_table(*s.table_, [&](std::uint8_t b) { return by_divide(b, divisor, shift); })) {
    s.promotion_ = Promotion::Divide;
    s.factor_ = divisor;
  }
  s.shift_t_ = shift;
  return s;
}

template <typename T>
Samples<T> Samples<T>::generated(const Shape& shape, std::shared_ptr<const RowFill> fill) {
  MAGMADNN_CHECK(fill != nullptr && *fill, ValueError, "Samples::generated: no fill function");
  MAGMADNN_CHECK(shape.ndim() >= 1, ShapeError, "Samples::generated: a scalar shape has no sample axis");
  Samples s;
  s.shape_ = shape;
  s.tensor_.reset();
  s.fill_ = std::move(fill);
  return s;
}

template <typename T>
Samples<T> Samples<T>::from_source(const Shape& shape, std::shared_ptr<const RowSource<T>> source) {
  MAGMADNN_CHECK(source != nullptr, ValueError, "Samples::from_source: no source");
  MAGMADNN_CHECK(shape.ndim() >= 1, ShapeError, "Samples::from_source: a scalar shape has no sample axis");
  Samples s;
  s.shape_ = shape;
  s.tensor_.reset();
  s.source_ = std::move(source);
  return s;
}

template <typename T>
std::int64_t Samples<T>::row_size() const {
  const std::int64_t n = rows();
  return n > 0 ? size() / n : 0;
}

template <typename T>
const Tensor<T>& Samples<T>::tensor() const {
  MAGMADNN_CHECK(tensor_ != nullptr, ValueError,
                 "Samples: samples " << shape_ << " are " << (is_bytes() ? "held as uint8" : "computed")
                                     << ", not held as a tensor");
  return *tensor_;
}

template <typename T>
const std::uint8_t* Samples<T>::byte_data() const {
  MAGMADNN_CHECK(is_bytes(), ValueError, "Samples: samples " << shape_ << " are held as a tensor, not as uint8");
  return bytes_->data() + offset_;
}

template <typename T>
const char* Samples<T>::storage_type() const noexcept {
  return is_bytes() ? "uint8" : is_generated() ? "generated" : dtype_name(Tensor<T>::get_dtype());
}

template <typename T>
std::uint64_t Samples<T>::storage_bytes() const noexcept {
  if (is_generated()) return ids_ ? sizeof(std::int64_t) * static_cast<std::uint64_t>(rows()) : 0;
  return static_cast<std::uint64_t>(size()) * (is_bytes() ? 1u : sizeof(T));
}

template <typename T>
memory_t Samples<T>::get_memory_type() const noexcept {
  return tensor_ == nullptr ? HOST : tensor_->get_memory_type();
}

template <typename T>
void Samples<T>::gather(const std::int64_t* rows, std::int64_t begin, std::int64_t count, T* dst,
                        SampleRng* rngs) const {
  const std::int64_t n = this->rows(), row = row_size();
  if (rows == nullptr) {
    MAGMADNN_CHECK(begin >= 0 && count >= 0 && begin + count <= n, IndexError,
                   "Samples::gather: rows [" << begin << ", " << begin + count << ") outside [0, " << n << ")");
  } else {
    for (std::int64_t i = 0; i < count; ++i)
      MAGMADNN_CHECK(rows[begin + i] >= 0 && rows[begin + i] < n, IndexError,
                     "Samples::gather: row " << rows[begin + i] << " outside [0, " << n << ") of " << shape_);
  }
  auto row_of = [&](std::int64_t i) { return rows ? rows[begin + i] : begin + i; };
  if (source_ != nullptr) {
    const std::int64_t* ids = ids_ ? ids_->data() + offset_ : nullptr;
    std::vector<std::int64_t> batch(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t r = row_of(i);
      batch[static_cast<std::size_t>(i)] = ids ? ids[r] : offset_ + r;
    }
    source_->fill(batch.data(), count, dst, rngs);
    return;
  }
  if (is_generated()) {
    const RowFill& fill = *fill_;
    const std::int64_t* ids = ids_ ? ids_->data() + offset_ : nullptr;
    for_rows(count, row * static_cast<std::int64_t>(sizeof(T)), [&](std::int64_t i) {
      const std::int64_t r = row_of(i);
      fill(ids ? ids[r] : offset_ + r, dst + i * row);
    });
    return;
  }
  if (!is_bytes()) {
    MAGMADNN_CHECK(host_readable(tensor_->get_memory_type()), NotSupportedError,
                   "Samples::gather: samples " << shape_ << " in DEVICE memory; gather reads host memory");
    const T* s = count > 0 ? tensor_->host_data() : nullptr;
    if (rows == nullptr) {
      if (count > 0) std::memcpy(dst, s + begin * row, sizeof(T) * static_cast<std::size_t>(count * row));
      return;
    }
    for_rows(count, row * static_cast<std::int64_t>(sizeof(T)), [&](std::int64_t i) {
      std::memcpy(dst + i * row, s + row_of(i) * row, sizeof(T) * static_cast<std::size_t>(row));
    });
    return;
  }
  const std::uint8_t* s = byte_data();
  const T* table = table_->data();
  const T factor = factor_, shift = shift_t_;
  for_rows(count, row * static_cast<std::int64_t>(sizeof(T)), [&](std::int64_t i) {
    const std::uint8_t* in = s + row_of(i) * row;
    T* out = dst + i * row;
    if (promotion_ == Promotion::Multiply) {
      for (std::int64_t k = 0; k < row; ++k) out[k] = by_multiply(in[k], factor, shift);
      return;
    }
    if (promotion_ == Promotion::Divide) {
      for (std::int64_t k = 0; k < row; ++k) out[k] = by_divide(in[k], factor, shift);
      return;
    }
    // Eight bytes per load: stores through `out` may alias any byte (uint8
    // is a character type), so byte-wise loads would be reloaded after
    // every store; one word held in a register is not.
    std::int64_t k = 0;
    if constexpr (std::endian::native == std::endian::little) {
      for (; k + 8 <= row; k += 8) {
        std::uint64_t w;
        std::memcpy(&w, in + k, sizeof w);
        for (int j = 0; j < 8; ++j) out[k + j] = table[(w >> (8 * j)) & 0xff];
      }
    }
    for (; k < row; ++k) out[k] = table[in[k]];
  });
}

template <typename T>
Samples<T> Samples<T>::slice(std::int64_t begin, std::int64_t end) const {
  MAGMADNN_CHECK(begin >= 0 && begin <= end && end <= rows(), IndexError,
                 "Samples::slice: rows [" << begin << ", " << end << ") of " << shape_);
  if (tensor_ != nullptr) return Samples(tensor_->slice(begin, end));
  Samples s = *this;
  std::vector<std::int64_t> dims = shape_.dims();
  dims[0] = end - begin;
  s.shape_ = Shape(dims);
  s.offset_ = offset_ + begin * (is_generated() ? 1 : row_size());
  return s;
}

template <typename T>
Samples<T> Samples<T>::take(const std::vector<std::int64_t>& rows) const {
  std::vector<std::int64_t> dims = shape_.dims();
  dims[0] = static_cast<std::int64_t>(rows.size());
  const auto count = static_cast<std::int64_t>(rows.size());
  if (is_generated()) {
    auto ids = std::make_shared<std::vector<std::int64_t>>(rows.size());
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t r = rows[static_cast<std::size_t>(i)];
      MAGMADNN_CHECK(r >= 0 && r < this->rows(), IndexError,
                     "Samples::take: row " << r << " outside [0, " << this->rows() << ") of " << shape_);
      (*ids)[static_cast<std::size_t>(i)] = ids_ ? (*ids_)[static_cast<std::size_t>(offset_ + r)] : offset_ + r;
    }
    Samples out = *this;
    out.shape_ = Shape(dims);
    out.ids_ = std::move(ids);
    out.offset_ = 0;
    return out;
  }
  if (!is_bytes()) {
    // Through a host copy when the tensor lives on the device.
    const Samples host = host_readable(tensor_->get_memory_type()) ? *this : Samples(tensor_->to(HOST));
    Tensor<T> out(Shape(dims), HOST);
    host.gather(rows.data(), 0, count, count > 0 ? out.mutable_host_data() : nullptr);
    return Samples(out);
  }
  const std::int64_t row = row_size(), n = this->rows();
  auto bytes = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(count * row));
  const std::uint8_t* s = byte_data();
  for (std::int64_t i = 0; i < count; ++i) {
    MAGMADNN_CHECK(rows[i] >= 0 && rows[i] < n, IndexError,
                   "Samples::take: row " << rows[i] << " outside [0, " << n << ") of " << shape_);
    std::memcpy(bytes->data() + i * row, s + rows[i] * row, static_cast<std::size_t>(row));
  }
  Samples out = *this;
  out.shape_ = Shape(dims);
  out.bytes_ = std::move(bytes);
  out.offset_ = 0;
  return out;
}

template <typename T>
Tensor<T> Samples<T>::to_tensor(memory_t mem) const {
  if (tensor_ != nullptr) return tensor_->to(mem);
  Tensor<T> host(shape_, HOST);
  if (size() > 0) gather(nullptr, 0, rows(), host.mutable_host_data());
  return mem == HOST ? host : host.to(mem);
}

template class Samples<float>;
template class Samples<double>;

}  // namespace magmadnn::data
