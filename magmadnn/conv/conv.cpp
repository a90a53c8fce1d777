#include "magmadnn/conv/conv.h"

#include <type_traits>

#include "magmadnn/backend/device_buffer.h"
#include "magmadnn/conv/chooser.h"
#include "magmadnn/conv/input_states.h"
#include "magmadnn/conv/pool_chooser.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/core/half.h"
#include "magmadnn/tensor/dispatch.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::conv {
namespace {

template <typename T>
DeviceKind kind_of(const Tensor<T>& t) {
  return t.on_device() ? DeviceKind::CUDA : DeviceKind::CPU;
}

template <typename T>
Tensor<T> like(const Shape& s, const Tensor<T>& t) {
  return Tensor<T>(s, t.get_memory_type(), t.get_device_id());
}

// Half and bfloat16 tensors are convolved by cuDNN only; say so instead of
// "no algorithm supports". (The CPU's bf16 convolution, conv_bf16.h, takes
// bf16 operands to float results and is not one of these algorithms.)
template <typename T>
void check_element_type(const Tensor<T>& t, const char* op) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    MAGMADNN_CHECK(t.on_device(), NotSupportedError,
                   op << ": " << dtype_name(dtype_v<T>)
                      << " convolution runs on the GPU only (cuDNN); cast host tensors to float");
    MAGMADNN_CHECK(!algorithms<T>(DeviceKind::CUDA).empty(), NotSupportedError,
                   op << ": " << dtype_name(dtype_v<T>) << " convolution needs cuDNN, which this build does not have");
  }
}

ConvProblem with_blocks(ConvProblem pr, Blocks b) {
  pr.x_block = b.x;
  pr.y_block = b.y;
  return pr;
}

}  // namespace

template <typename T>
Tensor<T> conv2d_forward(const Tensor<T>& x, const Tensor<T>& w, const Tensor<T>* bias, const ConvParams& params,
                         Algo algo, bool relu, bool keep_inputs, Blocks blocks) {
  const ConvProblem pr = with_blocks(make_problem(x.shape(), w.shape(), params), blocks);
  if (bias) {
    MAGMADNN_CHECK(bias->shape() == Shape{pr.k}, ShapeError,
                   "conv2d: bias " << bias->shape() << " must be {" << pr.k << "} for filters " << w.shape());
  }
  Backend& be = bias ? common_backend("conv2d", x, w, *bias) : common_backend("conv2d", x, w);
  check_element_type(x, "conv2d");
  ConvAlgorithm<T>& a = choose<T>(pr, Pass::Forward, kind_of(x), x.get_device_id(), algo);
  Tensor<T> y = like(pr.y_shape(), x);
  DeviceBuffer ws(be, a.workspace_bytes(pr, Pass::Forward), x.get_device_id());
  const T* b = bias ? bias->data() : nullptr;
  // Unknown states (0) make the algorithms keep nothing.
  const InputStatesScope states(keep_inputs ? x.write_stamp() : 0, keep_inputs ? w.write_stamp() : 0);
  if (relu && a.forward_relu(pr, x.data(), w.data(), b, y.mutable_data(), ws.data())) return y;
  a.forward(pr, x.data(), w.data(), b, y.mutable_data(), ws.data());
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    MAGMADNN_CHECK(!relu, NotSupportedError, "conv2d: a fused ReLU is float and double only");
  } else if (relu) {
    math::unary(UnaryOp::Relu, y, y);
  }
  return y;
}

template <typename T>
Tensor<T> conv2d_backward_data(const Tensor<T>& dy, const Tensor<T>& w, const Shape& x_shape, const ConvParams& params,
                               Algo algo, Blocks blocks) {
  const ConvProblem pr = with_blocks(make_problem(x_shape, w.shape(), params), blocks);
  MAGMADNN_CHECK(dy.shape() == pr.y_shape(), ShapeError,
                 "conv2d backward data: dy " << dy.shape() << " must be " << pr.y_shape() << " for input " << x_shape
                                             << " and filters " << w.shape());
  Backend& be = common_backend("conv2d backward data", dy, w);
  check_element_type(dy, "conv2d backward data");
  ConvAlgorithm<T>& a = choose<T>(pr, Pass::BackwardData, kind_of(dy), dy.get_device_id(), algo);
  Tensor<T> dx = like(x_shape, dy);
  DeviceBuffer ws(be, a.workspace_bytes(pr, Pass::BackwardData), dy.get_device_id());
  const InputStatesScope states(dy.write_stamp(), w.write_stamp());
  a.backward_data(pr, dy.data(), w.data(), dx.mutable_data(), ws.data());
  return dx;
}

template <typename T>
Tensor<T> conv2d_backward_filter(const Tensor<T>& x, const Tensor<T>& dy, const Shape& w_shape,
                                 const ConvParams& params, Algo algo, Tensor<T>* db, Blocks blocks) {
  const ConvProblem pr = with_blocks(make_problem(x.shape(), w_shape, params), blocks);
  MAGMADNN_CHECK(dy.shape() == pr.y_shape(), ShapeError,
                 "conv2d backward filter: dy " << dy.shape() << " must be " << pr.y_shape() << " for input "
                                               << x.shape() << " and filters " << w_shape);
  Backend& be = common_backend("conv2d backward filter", x, dy);
  check_element_type(x, "conv2d backward filter");
  ConvAlgorithm<T>& a = choose<T>(pr, Pass::BackwardFilter, kind_of(x), x.get_device_id(), algo);
  Tensor<T> dw = like(w_shape, x);
  if (db && (db->shape() != Shape{pr.k} || db->on_device() != x.on_device())) *db = like(Shape{pr.k}, x);
  DeviceBuffer ws(be, a.workspace_bytes(pr, Pass::BackwardFilter), x.get_device_id());
  const InputStatesScope states(x.write_stamp(), dy.write_stamp());
  a.backward_filter(pr, x.data(), dy.data(), dw.mutable_data(), db ? db->mutable_data() : nullptr, ws.data());
  return dw;
}

template <typename T>
Tensor<T> pool2d_forward(const Tensor<T>& x, const PoolParams& params, Tensor<std::int32_t>* argmax) {
  const Shape ys = pool_output_shape(x.shape(), params);
  (void)backend_of(x);
  PoolImpl<T>* impl = choose_pool<T>(x.shape(), params, false, kind_of(x));
  MAGMADNN_CHECK(impl != nullptr, NotSupportedError,
                 "pooling: no implementation for " << (x.on_device() ? "the GPU" : "the CPU") << " in this build");
  Tensor<T> y = like(ys, x);
  std::int32_t* am = nullptr;
  if (argmax && params.mode == PoolMode::Max) {
    if (argmax->shape() != ys || argmax->on_device() != x.on_device()) {
      *argmax = Tensor<std::int32_t>(ys, x.get_memory_type(), x.get_device_id());
    }
    am = argmax->mutable_data();
  }
  impl->forward(x.shape(), params, x.data(), y.mutable_data(), am);
  return y;
}

template <typename T>
Tensor<T> pool2d_backward(const Tensor<T>& x, const Tensor<T>& dy, const PoolParams& params,
                          const Tensor<std::int32_t>* argmax) {
  const Shape ys = pool_output_shape(x.shape(), params);
  MAGMADNN_CHECK(dy.shape() == ys, ShapeError,
                 "pooling backward: dy " << dy.shape() << " must be " << ys << " for input " << x.shape());
  (void)common_backend("pooling backward", x, dy);
  const bool use_am = argmax && params.mode == PoolMode::Max && !argmax->empty();
  if (use_am) {
    MAGMADNN_CHECK(argmax->shape() == ys, ShapeError,
                   "pooling backward: argmax " << argmax->shape() << " must be " << ys);
  }
  PoolImpl<T>* impl = choose_pool<T>(x.shape(), params, true, kind_of(x));
  MAGMADNN_CHECK(impl != nullptr, NotSupportedError,
                 "pooling: no implementation for " << (x.on_device() ? "the GPU" : "the CPU") << " in this build");
  Tensor<T> dx = like(x.shape(), x);
  impl->backward(x.shape(), params, x.data(), dy.data(), use_am ? argmax->data() : nullptr, dx.mutable_data());
  return dx;
}

#define MAGMADNN_CONV_INSTANTIATE_CONV(T)                                                                        \
  template Tensor<T> conv2d_forward<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>*, const ConvParams&, \
                                       Algo, bool, bool, Blocks);                                                        \
  template Tensor<T> conv2d_backward_data<T>(const Tensor<T>&, const Tensor<T>&, const Shape&, const ConvParams&, \
                                             Algo, Blocks);                                                              \
  template Tensor<T> conv2d_backward_filter<T>(const Tensor<T>&, const Tensor<T>&, const Shape&,                  \
                                               const ConvParams&, Algo, Tensor<T>*, Blocks);
#define MAGMADNN_CONV_INSTANTIATE(T)                                                                             \
  MAGMADNN_CONV_INSTANTIATE_CONV(T)                                                                              \
  template Tensor<T> pool2d_forward<T>(const Tensor<T>&, const PoolParams&, Tensor<std::int32_t>*);             \
  template Tensor<T> pool2d_backward<T>(const Tensor<T>&, const Tensor<T>&, const PoolParams&,                   \
                                        const Tensor<std::int32_t>*);
MAGMADNN_CONV_INSTANTIATE(float)
MAGMADNN_CONV_INSTANTIATE(double)
MAGMADNN_CONV_INSTANTIATE_CONV(half)
MAGMADNN_CONV_INSTANTIATE_CONV(bfloat16)

}  // namespace magmadnn::conv
