#include "magmadnn/tensor/tensor.h"

#include "magmadnn/core/errors.h"

namespace magmadnn {

template <typename T>
Tensor<T>::Tensor() = default;

template <typename T>
Tensor<T>::Tensor(const Shape& shape, memory_t mem, device_t device)
    : storage_(std::make_shared<MemoryManager<T>>(static_cast<std::size_t>(shape.numel()), mem, device)),
      shape_(shape),
      numel_(shape.numel()),
      mem_(mem),
      device_(device) {}

template <typename T>
Tensor<T>::Tensor(const Shape& shape, const tensor_filler_t<T>& filler, memory_t mem, device_t device)
    : Tensor(shape, mem, device) {
  fill(filler);
}

template <typename T>
Tensor<T> Tensor<T>::from_vector(const Shape& shape, const std::vector<T>& values, memory_t mem, device_t device) {
  MAGMADNN_CHECK(static_cast<std::int64_t>(values.size()) == shape.numel(), ShapeError,
                 "from_vector: " << values.size() << " values for shape " << shape << " (" << shape.numel()
                                 << " elements)");
  Tensor t(shape, mem, device);
  t.copy_from_host(values.data(), shape.numel());
  return t;
}

template <typename T>
Tensor<T> Tensor<T>::borrow_host(T* data, const Shape& shape, std::shared_ptr<void> keep_alive) {
  auto storage = std::make_shared<MemoryManager<T>>(data, static_cast<std::size_t>(shape.numel()),
                                                    std::move(keep_alive));
  return Tensor(std::move(storage), 0, shape, HOST, 0);
}

template <typename T>
Tensor<T>::Tensor(std::shared_ptr<MemoryManager<T>> storage, std::int64_t offset, Shape shape, memory_t mem,
                  device_t device)
    : storage_(std::move(storage)), offset_(offset), shape_(std::move(shape)), mem_(mem), device_(device) {
  numel_ = shape_.numel();
}

template <typename T>
Tensor<T>::Tensor(const Tensor& other) : shape_(other.shape_), numel_(other.numel_), mem_(other.mem_), device_(other.device_) {
  if (other.storage_) {
    storage_ = std::make_shared<MemoryManager<T>>(static_cast<std::size_t>(numel_), mem_, device_);
    copy_from(other);
  }
}

template <typename T>
Tensor<T>::Tensor(Tensor&& other) noexcept
    : storage_(std::move(other.storage_)),
      offset_(other.offset_),
      shape_(std::move(other.shape_)),
      numel_(other.numel_),
      mem_(other.mem_),
      device_(other.device_) {
  other.offset_ = 0;
  other.shape_ = Shape{0};
  other.numel_ = 0;
}

template <typename T>
Tensor<T>& Tensor<T>::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

template <typename T>
Tensor<T>& Tensor<T>::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    storage_ = std::move(other.storage_);
    offset_ = other.offset_;
    shape_ = std::move(other.shape_);
    numel_ = other.numel_;
    mem_ = other.mem_;
    device_ = other.device_;
    other.offset_ = 0;
    other.shape_ = Shape{0};
    other.numel_ = 0;
  }
  return *this;
}

template <typename T>
bool Tensor<T>::on_device() const noexcept {
  return storage_ && storage_->on_device();
}

template <typename T>
void Tensor<T>::check_storage(const char* what) const {
  MAGMADNN_CHECK(storage_ != nullptr || numel_ == 0, ValueError, what << " on a tensor without storage");
}

// -- elements -------------------------------------------------------------------------

template <typename T>
std::int64_t Tensor<T>::flat_index(const std::vector<std::int64_t>& index) const {
  MAGMADNN_CHECK(static_cast<std::int64_t>(index.size()) == shape_.ndim(), IndexError,
                 "index of " << index.size() << " axes for a tensor of shape " << shape_);
  std::int64_t flat = 0;
  for (std::size_t i = 0; i < index.size(); ++i) {
    const std::int64_t d = shape_.dims()[i];
    const std::int64_t k = index[i] < 0 ? index[i] + d : index[i];
    MAGMADNN_CHECK(k >= 0 && k < d, IndexError,
                   "index " << index[i] << " is out of range for axis " << i << " of shape " << shape_);
    flat = flat * d + k;
  }
  return flat;
}

template <typename T>
T Tensor<T>::get(std::int64_t flat) const {
  const std::int64_t k = flat < 0 ? flat + numel_ : flat;
  MAGMADNN_CHECK(k >= 0 && k < numel_, IndexError,
                 "flat index " << flat << " is out of range for shape " << shape_ << " (" << numel_ << " elements)");
  return storage_->get(static_cast<std::size_t>(offset_ + k));
}

template <typename T>
T Tensor<T>::get(const std::vector<std::int64_t>& index) const {
  return storage_->get(static_cast<std::size_t>(offset_ + flat_index(index)));
}

template <typename T>
void Tensor<T>::set(std::int64_t flat, T value) {
  const std::int64_t k = flat < 0 ? flat + numel_ : flat;
  MAGMADNN_CHECK(k >= 0 && k < numel_, IndexError,
                 "flat index " << flat << " is out of range for shape " << shape_ << " (" << numel_ << " elements)");
  storage_->set(static_cast<std::size_t>(offset_ + k), value);
}

template <typename T>
void Tensor<T>::set(const std::vector<std::int64_t>& index, T value) {
  storage_->set(static_cast<std::size_t>(offset_ + flat_index(index)), value);
}

// -- views -------------------------------------------------------------------------

template <typename T>
Tensor<T> Tensor<T>::view_dims(std::vector<std::int64_t> dims) const {
  std::int64_t known = 1, infer = -1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      MAGMADNN_CHECK(infer < 0, ShapeError, "view: more than one -1 in the view of shape " << shape_);
      infer = static_cast<std::int64_t>(i);
    } else {
      MAGMADNN_CHECK(dims[i] >= 0, ShapeError, "view: negative size " << dims[i] << " in the view of shape " << shape_);
      known *= dims[i];
    }
  }
  if (infer >= 0) {
    MAGMADNN_CHECK(known > 0 && numel_ % known == 0, ShapeError,
                   "view: cannot infer -1 in the view of shape " << shape_ << " with the other sizes' product " << known);
    dims[infer] = numel_ / known;
  }
  Shape s(dims);
  MAGMADNN_CHECK(s.numel() == numel_, ShapeError,
                 "view: shape " << shape_ << " (" << numel_ << " elements) cannot be viewed as " << s << " ("
                                << s.numel() << " elements)");
  return Tensor(storage_, offset_, s, mem_, device_);
}

template <typename T>
Tensor<T> Tensor<T>::slice(std::int64_t begin, std::int64_t end) const {
  MAGMADNN_CHECK(shape_.ndim() >= 1, ShapeError, "slice of a scalar tensor");
  const std::int64_t rows = shape_.dims()[0];
  MAGMADNN_CHECK(0 <= begin && begin <= end && end <= rows, IndexError,
                 "slice [" << begin << ", " << end << ") is outside axis 0 of shape " << shape_);
  std::vector<std::int64_t> dims = shape_.dims();
  dims[0] = end - begin;
  const std::int64_t row = rows ? numel_ / rows : 0;
  return Tensor(storage_, offset_ + begin * row, Shape(dims), mem_, device_);
}

template <typename T>
void Tensor<T>::reshape(const Shape& shape) {
  *this = view_dims(shape.dims());
}

template <typename T>
void Tensor<T>::squeeze() {
  std::vector<std::int64_t> dims;
  for (auto d : shape_) if (d != 1) dims.push_back(d);
  shape_ = Shape(dims);
}

template <typename T>
void Tensor<T>::squeeze(std::int64_t axis) {
  const std::int64_t a = shape_.normalize_axis(axis);
  MAGMADNN_CHECK(shape_.dims()[a] == 1, ShapeError,
                 "squeeze: axis " << axis << " of shape " << shape_ << " has size " << shape_.dims()[a] << ", not 1");
  std::vector<std::int64_t> dims = shape_.dims();
  dims.erase(dims.begin() + a);
  shape_ = Shape(dims);
}

template <typename T>
void Tensor<T>::unsqueeze(std::int64_t axis) {
  const std::int64_t n = shape_.ndim();
  const std::int64_t a = axis < 0 ? axis + n + 1 : axis;
  MAGMADNN_CHECK(a >= 0 && a <= n, IndexError, "unsqueeze: axis " << axis << " is out of range for shape " << shape_);
  std::vector<std::int64_t> dims = shape_.dims();
  dims.insert(dims.begin() + a, 1);
  shape_ = Shape(dims);
}

// -- raw data ---------------------------------------------------------------------

template <typename T>
const T* Tensor<T>::data() const {
  check_storage("data()");
  return storage_ ? storage_->data() + offset_ : nullptr;
}
template <typename T>
T* Tensor<T>::mutable_data() {
  check_storage("mutable_data()");
  return storage_ ? storage_->mutable_data() + offset_ : nullptr;
}
template <typename T>
const T* Tensor<T>::host_data() const {
  check_storage("host_data()");
  return storage_ ? storage_->host_data() + offset_ : nullptr;
}
template <typename T>
T* Tensor<T>::mutable_host_data() {
  check_storage("mutable_host_data()");
  return storage_ ? storage_->mutable_host_data() + offset_ : nullptr;
}
template <typename T>
const T* Tensor<T>::device_data() const {
  check_storage("device_data()");
  return storage_ ? storage_->device_data() + offset_ : nullptr;
}
template <typename T>
T* Tensor<T>::mutable_device_data() {
  check_storage("mutable_device_data()");
  return storage_ ? storage_->mutable_device_data() + offset_ : nullptr;
}

// -- copies -------------------------------------------------------------------------

template <typename T>
void Tensor<T>::copy_from(const Tensor& src) {
  MAGMADNN_CHECK(src.numel_ == numel_, ShapeError,
                 "copy_from: source shape " << src.shape_ << " has " << src.numel_ << " elements, destination shape "
                                            << shape_ << " has " << numel_);
  if (numel_ == 0) return;
  storage_->copy_from(*src.storage_, static_cast<std::size_t>(src.offset_), static_cast<std::size_t>(offset_),
                      static_cast<std::size_t>(numel_));
}

template <typename T>
void Tensor<T>::copy_from(const Tensor& src, std::int64_t begin, std::int64_t count) {
  MAGMADNN_CHECK(begin >= 0 && count >= 0 && begin + count <= src.numel_, IndexError,
                 "copy_from: range [" << begin << ", " << begin + count << ") is outside the source of shape "
                                      << src.shape_);
  MAGMADNN_CHECK(count <= numel_, IndexError,
                 "copy_from: " << count << " elements do not fit a destination of shape " << shape_);
  if (count == 0) return;
  storage_->copy_from(*src.storage_, static_cast<std::size_t>(src.offset_ + begin),
                      static_cast<std::size_t>(offset_), static_cast<std::size_t>(count));
}

template <typename T>
void Tensor<T>::copy_from_host(const T* values, std::int64_t count) {
  MAGMADNN_CHECK(count == numel_, ShapeError,
                 "copy_from_host: " << count << " values for shape " << shape_ << " (" << numel_ << " elements)");
  if (count) storage_->copy_from_host(values, static_cast<std::size_t>(count), static_cast<std::size_t>(offset_));
}

template <typename T>
Tensor<T> Tensor<T>::to(memory_t mem, device_t device) const {
  Tensor out(shape_, mem, device);
  out.copy_from(*this);
  return out;
}

template <typename T>
std::vector<T> Tensor<T>::to_vector() const {
  std::vector<T> v(static_cast<std::size_t>(numel_));
  if (numel_) storage_->copy_to_host(v.data(), v.size(), static_cast<std::size_t>(offset_));
  return v;
}

template <typename T>
void Tensor<T>::sync(bool device_to_host) {
  if (storage_) storage_->sync(device_to_host);
}

template <typename T>
void Tensor<T>::prefetch(bool to_host) {
  if (storage_) storage_->prefetch(to_host);
}

template class Tensor<float>;
template class Tensor<double>;
template class Tensor<half>;
template class Tensor<bfloat16>;
template class Tensor<std::int32_t>;
template class Tensor<std::int64_t>;

}  // namespace magmadnn
