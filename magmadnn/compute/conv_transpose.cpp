// The transposed convolution node: conv2d's passes in exchanged roles.
#include "magmadnn/compute/conv.h"
#include "magmadnn/conv/conv.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::op {

namespace {
template <typename T>
std::vector<OpPtr<T>> inputs_of(OpPtr<T> x, OpPtr<T> w, OpPtr<T> b) {
  std::vector<OpPtr<T>> in{std::move(x), std::move(w)};
  if (b) in.push_back(std::move(b));
  return in;
}
}  // namespace

template <typename T>
ConvTranspose2dNode<T>::ConvTranspose2dNode(OpPtr<T> x, OpPtr<T> w, OpPtr<T> b, const conv::ConvParams& params,
                                            std::int64_t out_h, std::int64_t out_w)
    : Operation<T>("conv_transpose2d", inputs_of(std::move(x), std::move(w), std::move(b))),
      params_(params), out_h_(out_h), out_w_(out_w) {}

template <typename T>
Shape ConvTranspose2dNode<T>::infer_shape(const std::vector<Shape>& in) const {
  const Shape& x = in[0];
  const Shape& w = in[1];
  MAGMADNN_CHECK(x.ndim() == 4 && w.ndim() == 4 && w[0] == x[1], ShapeError,
                 "conv_transpose2d: x " << x << " and w " << w << " (needs x {N, C, H, W}, w {C, K/groups, R, S})");
  const Shape y{x[0], w[1] * params_.groups, out_h_, out_w_};
  const conv::ConvProblem back = conv::make_problem(y, w, params_);  // the convolution transposed
  MAGMADNN_CHECK(back.p == x[2] && back.q == x[3], ShapeError,
                 "conv_transpose2d: an output " << y << " convolves to " << back.y_shape() << ", not to x " << x);
  if (in.size() > 2) {
    MAGMADNN_CHECK(in[2].numel() == y[1], ShapeError, "conv_transpose2d: bias " << in[2] << " for " << y[1] << " channels");
  }
  return y;
}

template <typename T>
void ConvTranspose2dNode<T>::forward() {
  const Tensor<T>& x = this->in(0);
  std::vector<Shape> shapes{x.shape(), this->in(1).shape()};
  if (this->inputs_.size() > 2) shapes.push_back(this->in(2).shape());
  const Shape ys = infer_shape(shapes);
  Tensor<T> y = conv::conv2d_backward_data(x, this->in(1), ys, params_);
  if (this->inputs_.size() > 2) y = math::add(y, this->in(2).view(Shape{1, ys[1], 1, 1}));
  this->output_ = std::move(y);
}

template <typename T>
void ConvTranspose2dNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed,
                                      std::vector<Tensor<T>>& gin) {
  const Tensor<T>& x = this->in(0);
  const Tensor<T>& w = this->in(1);
  if (needed[0]) gin[0] = conv::conv2d_forward<T>(g, w, nullptr, params_);
  if (needed[1]) gin[1] = conv::conv2d_backward_filter(g, x, w.shape(), params_);
  if (this->inputs_.size() > 2 && needed[2]) {
    Tensor<T> db(Shape{1, g.shape()[1], 1, 1}, g.get_memory_type(), g.get_device_id());
    math::reduce_to_shape(g, db);
    gin[2] = db.view(this->in(2).shape());
  }
}

template class ConvTranspose2dNode<float>;
template class ConvTranspose2dNode<double>;

}  // namespace magmadnn::op
