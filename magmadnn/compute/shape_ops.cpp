#include "magmadnn/compute/shape_ops.h"

#include <numeric>
#include <sstream>

#include "magmadnn/tensor/math.h"

namespace magmadnn::op {

namespace {
std::string dims_string(const std::vector<std::int64_t>& d) {
  std::ostringstream os;
  os << '{';
  for (std::size_t i = 0; i < d.size(); ++i) os << (i ? ", " : "") << d[i];
  os << '}';
  return os.str();
}

// Axis `axis` moved to the front, the others in order: used so that a concat
// along any axis becomes contiguous row blocks.
std::vector<int> front_perm(std::int64_t ndim, std::int64_t axis) {
  std::vector<int> p{static_cast<int>(axis)};
  for (std::int64_t i = 0; i < ndim; ++i)
    if (i != axis) p.push_back(static_cast<int>(i));
  return p;
}
std::vector<int> inverse(const std::vector<int>& p) {
  std::vector<int> q(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) q[static_cast<std::size_t>(p[i])] = static_cast<int>(i);
  return q;
}
Shape permuted(const Shape& s, const std::vector<int>& p) {
  std::vector<std::int64_t> d;
  for (int i : p) d.push_back(s.dims()[static_cast<std::size_t>(i)]);
  return Shape(d);
}
template <typename T>
Tensor<T> permute(const Tensor<T>& x, const std::vector<int>& p) {
  Tensor<T> y(permuted(x.shape(), p), x.get_memory_type(), x.get_device_id());
  math::permute(x, p, y);
  return y;
}
}  // namespace

// -- ReshapeNode ---------------------------------------------------------------------------
template <typename T>
ReshapeNode<T>::ReshapeNode(OpPtr<T> x, std::vector<std::int64_t> pattern, bool keep_batch)
    : Operation<T>("", {std::move(x)}), pattern_(std::move(pattern)), keep_batch_(keep_batch) {
  int free = 0;
  for (auto d : pattern_) {
    MAGMADNN_CHECK(d >= -1, ShapeError, kind() << ": invalid target shape " << dims_string(pattern_));
    free += d == -1;
  }
  MAGMADNN_CHECK(free <= 1, ShapeError, kind() << ": at most one -1 allowed in " << dims_string(pattern_));
  this->name_ = kind();
}

template <typename T>
Shape ReshapeNode<T>::infer_shape(const std::vector<Shape>& in) const {
  std::vector<std::int64_t> d;
  std::int64_t n = in[0].numel();
  if (keep_batch_) {
    MAGMADNN_CHECK(in[0].ndim() >= 1, ShapeError, "flatten: needs a batch axis, got " << in[0]);
    d.push_back(in[0][0]);
    n = in[0][0] ? n / in[0][0] : 0;
  }
  std::int64_t known = 1, free_at = -1;
  for (std::size_t i = 0; i < pattern_.size(); ++i) {
    if (pattern_[i] == -1) {
      free_at = static_cast<std::int64_t>(i);
    } else {
      known *= pattern_[i];
    }
  }
  std::vector<std::int64_t> p = pattern_;
  if (free_at >= 0) {
    MAGMADNN_CHECK(known > 0 && n % known == 0, ShapeError,
                   kind() << ": cannot reshape " << in[0] << " into " << dims_string(pattern_));
    p[static_cast<std::size_t>(free_at)] = n / known;
  } else {
    MAGMADNN_CHECK(known == n, ShapeError, kind() << ": cannot reshape " << in[0] << " into " << dims_string(pattern_));
  }
  d.insert(d.end(), p.begin(), p.end());
  return Shape(d);
}

template <typename T>
void ReshapeNode<T>::forward() {
  this->output_ = this->in(0).view(infer_shape({this->in(0).shape()}));
}

template <typename T>
void ReshapeNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  if (!needed[0]) return;
  Tensor<T> d(g);  // deep copy: gradients never share storage
  d.reshape(this->in(0).shape());
  gin[0] = std::move(d);
}

// -- ConcatNode ---------------------------------------------------------------------------------
template <typename T>
ConcatNode<T>::ConcatNode(std::vector<OpPtr<T>> xs, std::int64_t axis)
    : Operation<T>("concat", std::move(xs)), axis_(axis) {
  MAGMADNN_CHECK(!this->inputs_.empty(), ValueError, "concat: needs at least one input");
}

template <typename T>
Shape ConcatNode<T>::infer_shape(const std::vector<Shape>& in) const {
  const std::int64_t ax = in[0].normalize_axis(axis_);
  std::vector<std::int64_t> d = in[0].dims();
  for (std::size_t i = 1; i < in.size(); ++i) {
    bool ok = in[i].ndim() == in[0].ndim();
    for (std::int64_t k = 0; ok && k < in[0].ndim(); ++k) ok = k == ax || in[i][k] == in[0][k];
    MAGMADNN_CHECK(ok, ShapeError,
                   "concat: shapes " << in[0] << " and " << in[i] << " differ outside axis " << axis_);
    d[static_cast<std::size_t>(ax)] += in[i][ax];
  }
  return Shape(d);
}

template <typename T>
void ConcatNode<T>::forward() {
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < this->inputs_.size(); ++i) shapes.push_back(this->in(i).shape());
  const Shape out_shape = infer_shape(shapes);
  const std::int64_t ax = out_shape.normalize_axis(axis_);
  const auto p = front_perm(out_shape.ndim(), ax);
  Tensor<T> front(permuted(out_shape, p), this->in(0).get_memory_type(), this->in(0).get_device_id());
  std::int64_t row = 0;
  for (std::size_t i = 0; i < this->inputs_.size(); ++i) {
    const std::int64_t n = this->in(i).shape()[ax];
    Tensor<T> block = front.slice(row, row + n);
    if (ax == 0) {
      block.copy_from(this->in(i));
    } else {
      block.copy_from(permute(this->in(i), p));
    }
    row += n;
  }
  this->output_ = ax == 0 ? std::move(front) : permute(front, inverse(p));
}

template <typename T>
void ConcatNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  const std::int64_t ax = g.shape().normalize_axis(axis_);
  const auto p = front_perm(g.ndim(), ax);
  const Tensor<T> front = ax == 0 ? g.view(g.shape()) : permute(g, p);
  std::int64_t row = 0;
  for (std::size_t i = 0; i < this->inputs_.size(); ++i) {
    const std::int64_t n = this->in(i).shape()[ax];
    if (needed[i]) {
      Tensor<T> block(front.slice(row, row + n));  // deep copy of the rows
      gin[i] = ax == 0 ? std::move(block) : permute(block, inverse(p));
    }
    row += n;
  }
}

// -- PermuteNode ---------------------------------------------------------------------------------
template <typename T>
PermuteNode<T>::PermuteNode(OpPtr<T> x, std::vector<int> perm)
    : Operation<T>("permute", {std::move(x)}), perm_(std::move(perm)) {
  std::vector<bool> seen(perm_.size(), false);
  for (int a : perm_) {
    MAGMADNN_CHECK(a >= 0 && static_cast<std::size_t>(a) < perm_.size() && !seen[static_cast<std::size_t>(a)],
                   ValueError, "permute: the order names axis " << a << ", not each of 0.." << perm_.size() - 1
                                                                << " once");
    seen[static_cast<std::size_t>(a)] = true;
  }
}

template <typename T>
Shape PermuteNode<T>::infer_shape(const std::vector<Shape>& in) const {
  MAGMADNN_CHECK(static_cast<std::size_t>(in[0].ndim()) == perm_.size(), ShapeError,
                 "permute: an order of " << perm_.size() << " axes for shape " << in[0]);
  return permuted(in[0], perm_);
}

template <typename T>
void PermuteNode<T>::forward() {
  const Tensor<T>& x = this->in(0);
  math::permute(x, perm_, this->output_buffer(infer_shape({x.shape()}), x));
}

template <typename T>
void PermuteNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  if (needed[0]) gin[0] = permute(g, inverse(perm_));
}

// -- SliceNode -----------------------------------------------------------------------------------
template <typename T>
SliceNode<T>::SliceNode(OpPtr<T> x, std::int64_t axis, std::int64_t begin, std::int64_t end)
    : Operation<T>("slice", {std::move(x)}), axis_(axis), begin_(begin), end_(end) {}

template <typename T>
Shape SliceNode<T>::infer_shape(const std::vector<Shape>& in) const {
  MAGMADNN_CHECK(axis_ >= -in[0].ndim() && axis_ < in[0].ndim(), ShapeError,
                 "slice: axis " << axis_ << " is out of range for shape " << in[0]);
  const std::int64_t ax = in[0].normalize_axis(axis_);
  MAGMADNN_CHECK(0 <= begin_ && begin_ <= end_ && end_ <= in[0][ax], ShapeError,
                 "slice: [" << begin_ << ", " << end_ << ") of axis " << axis_ << " of shape " << in[0]);
  std::vector<std::int64_t> d = in[0].dims();
  d[static_cast<std::size_t>(ax)] = end_ - begin_;
  return Shape(d);
}

template <typename T>
void SliceNode<T>::forward() {
  const Tensor<T>& x = this->in(0);
  const Shape out_shape = infer_shape({x.shape()});
  const std::int64_t ax = x.shape().normalize_axis(axis_);
  const auto p = front_perm(x.ndim(), ax);
  const Tensor<T> front = ax == 0 ? x.view(x.shape()) : permute(x, p);
  Tensor<T> rows(front.slice(begin_, end_));  // deep copy of the rows
  this->output_ = ax == 0 ? std::move(rows) : permute(rows, inverse(p));
  MAGMADNN_CHECK(this->output_.shape() == out_shape, ShapeError, "slice: internal shape mismatch");
}

template <typename T>
void SliceNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  if (!needed[0]) return;
  const Tensor<T>& x = this->in(0);
  const std::int64_t ax = x.shape().normalize_axis(axis_);
  const auto p = front_perm(x.ndim(), ax);
  Tensor<T> front(permuted(x.shape(), p), g.get_memory_type(), g.get_device_id());
  math::fill(front, T(0));
  Tensor<T> rows = front.slice(begin_, end_);  // a view into front
  rows.copy_from(ax == 0 ? g.view(g.shape()) : permute(g, p));
  gin[0] = ax == 0 ? std::move(front) : permute(front, inverse(p));
}

template class SliceNode<float>;
template class SliceNode<double>;
template class PermuteNode<float>;
template class PermuteNode<double>;
template class ReshapeNode<float>;
template class ReshapeNode<double>;
template class ConcatNode<float>;
template class ConcatNode<double>;

}  // namespace magmadnn::op
