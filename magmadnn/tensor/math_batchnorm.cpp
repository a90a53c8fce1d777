// Batch normalisation (with a residual input and ReLU after it): argument
// checks, the backend's fused kernel, and the composition used where a
// backend has none.
#include <algorithm>
#include <utility>

#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/dispatch.h"
#include "magmadnn/tensor/math.h"
#include "magmadnn/tensor/math_blocked.h"
#include "magmadnn/backend/cpu/batchnorm_blocked.h"
#include "magmadnn/backend/cpu/lane_walk.h"

namespace magmadnn::math {

namespace {

// x as {N, C, R}: R is the product of the axes after C (1 for {N, C}).
struct Ncr {
  std::int64_t n, c, r;
  Shape shape() const { return Shape{n, c, r}; }
  Shape stat() const { return Shape{1, c, 1}; }
};

template <typename T>
Ncr ncr_of(const char* name, const Tensor<T>& x) {
  MAGMADNN_CHECK(x.shape().ndim() >= 2, ShapeError, "math::" << name << ": x must be {N, C, ...}, got " << x.shape());
  const std::int64_t n = x.shape()[0], c = x.shape()[1];
  return {n, c, n * c == 0 ? 0 : x.size() / (n * c)};
}

template <typename T>
void check_channels(const char* name, const char* what, const Tensor<T>& t, const Ncr& d, const Shape& x) {
  MAGMADNN_CHECK(t.size() == d.c, ShapeError,
                 "math::" << name << ": " << what << " " << t.shape() << " must have " << d.c
                          << " elements, one per channel of x " << x);
}

template <typename T>
void check_like_x(const char* name, const char* what, const Tensor<T>& t, const Shape& x) {
  MAGMADNN_CHECK(t.shape() == x, ShapeError, "math::" << name << ": " << what << " " << t.shape()
                                                      << " must have x's shape " << x);
}

// Sum over axes 0 and 2 of {N, C, R}, kept as {1, C, 1}.
template <typename T>
Tensor<T> sum_nr(const Tensor<T>& v) {
  return sum(sum(v, 2, true), 0, true);
}

template <typename T>
Ncr check_forward(const Tensor<T>& x, const Tensor<T>& gamma, const Tensor<T>& beta, const Tensor<T>* skip,
                  const Tensor<T>* running_mean, const Tensor<T>* running_var, const Tensor<T>& y,
                  const Tensor<T>& mean, const Tensor<T>& var, const Tensor<T>& invstd) {
  const char* name = "batchnorm_forward";
  const Ncr d = ncr_of(name, x);
  const Shape& s = x.shape();
  check_channels(name, "gamma", gamma, d, s);
  check_channels(name, "beta", beta, d, s);
  check_channels(name, "mean", mean, d, s);
  check_channels(name, "var", var, d, s);
  check_channels(name, "invstd", invstd, d, s);
  check_like_x(name, "y", y, s);
  if (skip) check_like_x(name, "skip", *skip, s);
  MAGMADNN_CHECK((running_mean == nullptr) == (running_var == nullptr), ValueError,
                 "math::batchnorm_forward: give both running statistics (inference) or neither (training)");
  if (running_mean) {
    check_channels(name, "running_mean", *running_mean, d, s);
    check_channels(name, "running_var", *running_var, d, s);
  } else {
    MAGMADNN_CHECK(d.c == 0 || d.n * d.r >= 1, ValueError,
                   "math::batchnorm_forward: batch statistics need at least one value per channel, x is " << s);
  }
  return d;
}

template <typename T>
Ncr check_backward(const Tensor<T>& x, const Tensor<T>* y, const Tensor<T>& g, const Tensor<T>& gamma,
                   const Tensor<T>& mean, const Tensor<T>& invstd, const Tensor<T>* dx, const Tensor<T>* dskip,
                   const Tensor<T>& dgamma, const Tensor<T>& dbeta) {
  const char* name = "batchnorm_backward";
  const Ncr d = ncr_of(name, x);
  const Shape& s = x.shape();
  check_like_x(name, "g", g, s);
  if (y) check_like_x(name, "y", *y, s);
  if (dx) check_like_x(name, "dx", *dx, s);
  if (dskip) check_like_x(name, "dskip", *dskip, s);
  check_channels(name, "gamma", gamma, d, s);
  check_channels(name, "mean", mean, d, s);
  check_channels(name, "invstd", invstd, d, s);
  check_channels(name, "dgamma", dgamma, d, s);
  check_channels(name, "dbeta", dbeta, d, s);
  return d;
}

// Null stays null; a tensor gives its compute-side pointer.
template <typename T>
const T* ptr(const Tensor<T>* t) {
  return t ? t->data() : nullptr;
}
template <typename T>
T* mut(Tensor<T>* t) {
  return t ? t->mutable_data() : nullptr;
}

}  // namespace

template <typename T>
void batchnorm_forward_composed(const Tensor<T>& x, const Tensor<T>& gamma, const Tensor<T>& beta,
                                const Tensor<T>* skip, bool relu, T eps, const Tensor<T>* running_mean,
                                const Tensor<T>* running_var, Tensor<T>& y, Tensor<T>& mean, Tensor<T>& var,
                                Tensor<T>& invstd) {
  const Ncr d = check_forward(x, gamma, beta, skip, running_mean, running_var, y, mean, var, invstd);
  const Tensor<T> xv = x.view(d.shape());
  Tensor<T> mu, v, xc;
  if (running_mean == nullptr) {
    const T m = static_cast<T>(d.n * d.r);
    mu = scale(sum_nr(xv), T(1) / m);
    xc = sub(xv, mu);
    v = scale(sum_nr(product(xc, xc)), T(1) / m);
  } else {
    mu = Tensor<T>(running_mean->view(d.stat()));
    v = Tensor<T>(running_var->view(d.stat()));
    xc = sub(xv, mu);
  }
  Tensor<T> inv = unary(UnaryOp::Reciprocal, unary(UnaryOp::Sqrt, add_scalar(v, eps)));
  Tensor<T> yv = y.view(d.shape());
  product(xc, inv, yv);
  product(yv, gamma.view(d.stat()), yv);
  add(yv, beta.view(d.stat()), yv);
  if (skip) add(yv, skip->view(d.shape()), yv);
  if (relu) unary(UnaryOp::Relu, yv, yv);
  mean.copy_from(mu);
  var.copy_from(v);
  invstd.copy_from(inv);
}

template <typename T>
void batchnorm_backward_composed(const Tensor<T>& x, const Tensor<T>* y, const Tensor<T>& g, const Tensor<T>& gamma,
                                 const Tensor<T>& mean, const Tensor<T>& invstd, bool training, Tensor<T>* dx,
                                 Tensor<T>* dskip, Tensor<T>& dgamma, Tensor<T>& dbeta) {
  const Ncr d = check_backward(x, y, g, gamma, mean, invstd, dx, dskip, dgamma, dbeta);
  Tensor<T> gm = g.view(d.shape());
  if (y) {
    const Tensor<T> yv = y->view(d.shape());
    Tensor<T> masked(d.shape(), g.get_memory_type(), g.get_device_id());
    unary_backward(UnaryOp::Relu, yv, yv, gm, masked);
    gm = std::move(masked);
  }
  if (dskip) dskip->copy_from(gm);
  const Tensor<T> inv = invstd.view(d.stat());
  const Tensor<T> xhat = product(sub(x.view(d.shape()), mean.view(d.stat())), inv);
  const Tensor<T> sg = sum_nr(gm);
  const Tensor<T> sgx = sum_nr(product(gm, xhat));
  if (dx) {
    const Tensor<T> k = product(gamma.view(d.stat()), inv);
    Tensor<T> dxv = dx->view(d.shape());
    if (training) {
      // dx = gamma invstd / m (m g - sum(g) - xhat sum(g xhat))
      const T m = static_cast<T>(d.n * d.r);
      Tensor<T> t = scale(gm, m);
      sub(t, sg, t);
      sub(t, product(xhat, sgx), t);
      product(t, scale(k, T(1) / m), dxv);
    } else {
      product(gm, k, dxv);
    }
  }
  dgamma.copy_from(sgx);
  dbeta.copy_from(sg);
}

namespace {

// The kernels' arguments, once the tensors are checked, with the backend
// they share.
template <typename T>
std::pair<Backend*, typename Kernels<T>::BatchNormForward> forward_args(
    const Tensor<T>& x, const Tensor<T>& gamma, const Tensor<T>& beta, const Tensor<T>* skip, bool relu, T eps,
    const Tensor<T>* running_mean, const Tensor<T>* running_var, Tensor<T>& y, Tensor<T>& mean, Tensor<T>& var,
    Tensor<T>& invstd) {
  const Ncr d = check_forward(x, gamma, beta, skip, running_mean, running_var, y, mean, var, invstd);
  Backend& be = common_backend("math::batchnorm_forward", x, gamma, beta, y, mean, var, invstd);
  if (skip) common_backend("math::batchnorm_forward", x, *skip);
  if (running_mean) common_backend("math::batchnorm_forward", x, *running_mean, *running_var);
  return {&be,
          {x.data(), ptr(skip), y.mutable_data(), d.n, d.c, d.r, gamma.data(), beta.data(), eps, relu,
           ptr(running_mean), ptr(running_var), mean.mutable_data(), var.mutable_data(), invstd.mutable_data()}};
}

template <typename T>
std::pair<Backend*, typename Kernels<T>::BatchNormBackward> backward_args(
    const Tensor<T>& x, const Tensor<T>* y, const Tensor<T>& g, const Tensor<T>& gamma, const Tensor<T>& mean,
    const Tensor<T>& invstd, bool training, Tensor<T>* dx, Tensor<T>* dskip, Tensor<T>& dgamma, Tensor<T>& dbeta) {
  const Ncr d = check_backward(x, y, g, gamma, mean, invstd, dx, dskip, dgamma, dbeta);
  Backend& be = common_backend("math::batchnorm_backward", x, g, gamma, mean, invstd, dgamma, dbeta);
  if (y) common_backend("math::batchnorm_backward", x, *y);
  if (dx) common_backend("math::batchnorm_backward", x, *dx);
  if (dskip) common_backend("math::batchnorm_backward", x, *dskip);
  return {&be,
          {x.data(), ptr(y), g.data(), d.n, d.c, d.r, gamma.data(), mean.data(), invstd.data(), training, mut(dx),
           mut(dskip), dgamma.mutable_data(), dbeta.mutable_data()}};
}

template <typename T>
void check_blocked(const char* name, int block, const Tensor<T>& x) {
  MAGMADNN_CHECK(!x.on_device(), ValueError, "math::" << name << ": the blocked layout is for host tensors");
  MAGMADNN_CHECK(x.ndim() == 4 && cpu::walkable(x.shape()[1], block), ValueError,
                 "math::" << name << ": x " << x.shape() << " cannot hold channel block " << block);
}

}  // namespace

template <typename T>
void batchnorm_forward(const Tensor<T>& x, const Tensor<T>& gamma, const Tensor<T>& beta, const Tensor<T>* skip,
                       bool relu, T eps, const Tensor<T>* running_mean, const Tensor<T>* running_var, Tensor<T>& y,
                       Tensor<T>& mean, Tensor<T>& var, Tensor<T>& invstd) {
  const auto [be, a] = forward_args(x, gamma, beta, skip, relu, eps, running_mean, running_var, y, mean, var, invstd);
  if (kernels<T>(*be).batchnorm_forward(a)) return;
  batchnorm_forward_composed(x, gamma, beta, skip, relu, eps, running_mean, running_var, y, mean, var, invstd);
}

template <typename T>
void batchnorm_backward(const Tensor<T>& x, const Tensor<T>* y, const Tensor<T>& g, const Tensor<T>& gamma,
                        const Tensor<T>& mean, const Tensor<T>& invstd, bool training, Tensor<T>* dx,
                        Tensor<T>* dskip, Tensor<T>& dgamma, Tensor<T>& dbeta) {
  const auto [be, a] = backward_args(x, y, g, gamma, mean, invstd, training, dx, dskip, dgamma, dbeta);
  if (kernels<T>(*be).batchnorm_backward(a)) return;
  batchnorm_backward_composed(x, y, g, gamma, mean, invstd, training, dx, dskip, dgamma, dbeta);
}

template <typename T>
void batchnorm_forward_blocked(int block, const Tensor<T>& x, const Tensor<T>& gamma, const Tensor<T>& beta,
                               const Tensor<T>* skip, bool relu, T eps, const Tensor<T>* running_mean,
                               const Tensor<T>* running_var, Tensor<T>& y, Tensor<T>& mean, Tensor<T>& var,
                               Tensor<T>& invstd) {
  if (block == 0) {
    batchnorm_forward(x, gamma, beta, skip, relu, eps, running_mean, running_var, y, mean, var, invstd);
    return;
  }
  check_blocked("batchnorm_forward", block, x);
  const auto args = forward_args(x, gamma, beta, skip, relu, eps, running_mean, running_var, y, mean, var, invstd);
  cpu::batchnorm_forward_blocked<T>(args.second, block);
}

template <typename T>
void batchnorm_backward_blocked(int block, const Tensor<T>& x, const Tensor<T>* y, const Tensor<T>& g,
                                const Tensor<T>& gamma, const Tensor<T>& mean, const Tensor<T>& invstd, bool training,
                                Tensor<T>* dx, Tensor<T>* dskip, Tensor<T>& dgamma, Tensor<T>& dbeta) {
  if (block == 0) {
    batchnorm_backward(x, y, g, gamma, mean, invstd, training, dx, dskip, dgamma, dbeta);
    return;
  }
  check_blocked("batchnorm_backward", block, x);
  const auto args = backward_args(x, y, g, gamma, mean, invstd, training, dx, dskip, dgamma, dbeta);
  cpu::batchnorm_backward_blocked<T>(args.second, block);
}

#define MAGMADNN_INSTANTIATE(T)                                                                                    \
  template void batchnorm_forward<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, const Tensor<T>*, bool, \
                                     T, const Tensor<T>*, const Tensor<T>*, Tensor<T>&, Tensor<T>&, Tensor<T>&,    \
                                     Tensor<T>&);                                                                  \
  template void batchnorm_backward<T>(const Tensor<T>&, const Tensor<T>*, const Tensor<T>&, const Tensor<T>&,      \
                                      const Tensor<T>&, const Tensor<T>&, bool, Tensor<T>*, Tensor<T>*,            \
                                      Tensor<T>&, Tensor<T>&);                                                     \
  template void batchnorm_forward_composed<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&,                \
                                              const Tensor<T>*, bool, T, const Tensor<T>*, const Tensor<T>*,       \
                                              Tensor<T>&, Tensor<T>&, Tensor<T>&, Tensor<T>&);                     \
  template void batchnorm_backward_composed<T>(const Tensor<T>&, const Tensor<T>*, const Tensor<T>&,               \
                                               const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, bool,         \
                                               Tensor<T>*, Tensor<T>*, Tensor<T>&, Tensor<T>&);                     \
  template void batchnorm_forward_blocked<T>(int, const Tensor<T>&, const Tensor<T>&, const Tensor<T>&,            \
                                             const Tensor<T>*, bool, T, const Tensor<T>*, const Tensor<T>*,        \
                                             Tensor<T>&, Tensor<T>&, Tensor<T>&, Tensor<T>&);                      \
  template void batchnorm_backward_blocked<T>(int, const Tensor<T>&, const Tensor<T>*, const Tensor<T>&,           \
                                              const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, bool,          \
                                              Tensor<T>*, Tensor<T>*, Tensor<T>&, Tensor<T>&);
MAGMADNN_INSTANTIATE(float)
MAGMADNN_INSTANTIATE(double)
#undef MAGMADNN_INSTANTIATE

}  // namespace magmadnn::math
