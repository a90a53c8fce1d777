#include "magmadnn/layer/residual_layer.h"

#include "magmadnn/compute/activation.h"
#include "magmadnn/compute/arithmetic.h"
#include "magmadnn/layer/activation_layer.h"

namespace magmadnn::layer {

template <typename T>
Ref<Conv2dLayer<T>> ResidualLayer<T>::conv(const op::Expr<T>& in, const std::string& key, std::int64_t k,
                                           std::int64_t filters, Dims2 stride) {
  const std::int64_t pad = k / 2;
  // The inner layers are named after the block, so they take no default
  // names from the process-wide counters (the next top-level conv2d stays
  // "conv2d_<n>" whatever blocks came before).
  auto c = make_layer<Conv2dLayer<T>>(in, Dims2{k, k}, filters, conv_geometry({pad, pad}, stride, {1, 1}),
                                      /*use_bias=*/false, init_for<T>(RELU), tensor_filler_t<T>{ZERO},
                                      conv::Algo::Auto, this->name_ + "/" + key);
  this->add_weight(key + "/W", c->get_filter());
  parts_.push_back(c.ptr());
  return c;
}

template <typename T>
Ref<BatchNormLayer<T>> ResidualLayer<T>::norm(const op::Expr<T>& in, const std::string& key) {
  auto b = make_layer<BatchNormLayer<T>>(in, 0.1, 1e-5, this->name_ + "/" + key);
  this->add_weight(key + "/gamma", b->get_gamma());
  this->add_weight(key + "/beta", b->get_beta());
  parts_.push_back(b.ptr());
  return b;
}

template <typename T>
ResidualLayer<T>::ResidualLayer(op::Expr<T> x, std::int64_t filters, Dims2 stride, std::string name)
    : Layer<T>(std::move(name), std::move(x), "residual") {
  const Shape in = this->known_input_shape();
  MAGMADNN_CHECK(in.ndim() == 4, ShapeError,
                 "layer::residual " << this->name_ << ": input must be {N, C, H, W}, got " << in);
  MAGMADNN_CHECK(filters >= 1, ValueError,
                 "layer::residual " << this->name_ << ": filters must be >= 1, got " << filters);
  MAGMADNN_CHECK(stride.h >= 1 && stride.w >= 1, ValueError,
                 "layer::residual " << this->name_ << ": strides must be >= 1, got " << stride.h << "x" << stride.w);
  auto c1 = conv(this->input_, "conv1", 3, filters, stride);
  auto b1 = norm(c1->out(), "bn1");
  auto c2 = conv(op::relu(b1->out()), "conv2", 3, filters, {1, 1});
  auto b2 = norm(c2->out(), "bn2");
  bn1_ = b1.ptr();
  bn2_ = b2.ptr();
  op::Expr<T> shortcut = this->input_;
  if (in[1] != filters || stride.h != 1 || stride.w != 1) {
    auto c3 = conv(this->input_, "conv3", 1, filters, stride);
    auto b3 = norm(c3->out(), "bn3");
    bn3_ = b3.ptr();
    shortcut = b3->out();
  }
  this->set_output(op::relu(op::add(b2->out(), shortcut)));
}

template <typename T>
std::vector<std::pair<std::string, Tensor<T>*>> ResidualLayer<T>::get_state() {
  std::vector<std::pair<std::string, Tensor<T>*>> state;
  for (const auto& bn : {bn1_, bn2_, bn3_}) {
    if (!bn) continue;
    for (auto& entry : bn->get_state()) state.push_back(std::move(entry));  // already "<name>/bnK/..."
  }
  return state;
}

template class ResidualLayer<float>;
template class ResidualLayer<double>;

}  // namespace magmadnn::layer
