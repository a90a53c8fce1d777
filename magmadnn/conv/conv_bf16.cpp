// oneDNN bf16 convolutions. Plain layouts (nchw, oihw/goihw) are handed to
// oneDNN as they are: the operands are cast from float per call anyway, and
// a reorder into a blocked layout would be a second pass over them.
#include "magmadnn/conv/conv_bf16.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>

#include <atomic>
#include <chrono>

#include "magmadnn/backend/registry.h"
#include "magmadnn/conv/chooser.h"
#include "magmadnn/conv/conv.h"
#include "magmadnn/conv/onednn_util.h"
#include "magmadnn/core/determinism.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::conv {
namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

enum class Pass3 { Forward, BackwardData, BackwardFilter };

struct Prims {
  dnnl::primitive prim;
  memory::desc x_md, w_md, y_md, bias_md;
};

class Bf16Convs {
 public:
  static Bf16Convs& instance() {
    static Bf16Convs inst;
    return inst;
  }

  // The primitive of one pass of `pr`; `bias` selects forward with a bias
  // and backward_filter with a bias gradient.
  const Prims& get(const ConvProblem& pr, Pass3 pass, bool bias) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto key = std::make_tuple(pr.to_string(), static_cast<int>(pass), bias);
    auto it = cache_.find(key);
    if (it != cache_.end()) return *it->second;
    auto made = create(pr, pass, bias);
    return *cache_.emplace(std::move(key), std::move(made)).first->second;
  }

 private:
  Bf16Convs() = default;

  std::unique_ptr<Prims> create(const ConvProblem& pr, Pass3 pass, bool bias) const {
    const memory::dims x_dims{pr.n, pr.c, pr.h, pr.w}, y_dims{pr.n, pr.k, pr.p, pr.q};
    const memory::dims w_dims = onednn::weight_dims(pr);
    const tag wtag = onednn::weight_tag(pr);
    const onednn::Geometry geo = onednn::geometry(pr);
    dnnl::engine& engine_ = onednn::engine();
    auto out = std::make_unique<Prims>();
    // Operands read in bf16, results written in float.
    const bool fwd = pass == Pass3::Forward, bwd_d = pass == Pass3::BackwardData;
    out->x_md = memory::desc(x_dims, fwd || !bwd_d ? dt::bf16 : dt::f32, tag::nchw);
    out->w_md = memory::desc(w_dims, pass == Pass3::BackwardFilter ? dt::f32 : dt::bf16, wtag);
    out->y_md = memory::desc(y_dims, fwd ? dt::f32 : dt::bf16, tag::nchw);
    if (bias) out->bias_md = memory::desc({pr.k}, dt::f32, tag::x);
    try {
      // The backward passes need a forward primitive descriptor as a hint.
      const memory::desc hint_x(x_dims, dt::bf16, tag::nchw), hint_w(w_dims, dt::bf16, wtag);
      const memory::desc hint_y(y_dims, dt::f32, tag::nchw);
      const auto direct = dnnl::algorithm::convolution_direct;
      const dnnl::convolution_forward::primitive_desc hint = onednn_compat::conv_forward_pd(
          engine_, dnnl::prop_kind::forward_training, direct, hint_x, hint_w, nullptr, hint_y, geo);
      switch (pass) {
        case Pass3::Forward:
          out->prim = dnnl::convolution_forward(
              bias ? onednn_compat::conv_forward_pd(engine_, dnnl::prop_kind::forward_training, direct, out->x_md,
                                                    out->w_md, &out->bias_md, out->y_md, geo)
                   : hint);
          break;
        case Pass3::BackwardData:
          out->prim = dnnl::convolution_backward_data(
              onednn_compat::conv_backward_data_pd(engine_, direct, out->x_md, out->w_md, out->y_md, geo, hint));
          break;
        case Pass3::BackwardFilter:
          out->prim = dnnl::convolution_backward_weights(onednn_compat::conv_backward_weights_pd(
              engine_, direct, out->x_md, out->w_md, bias ? &out->bias_md : nullptr, out->y_md, geo, hint));
          break;
      }
    } catch (const dnnl::error& e) {
      MAGMADNN_THROW(DeviceError, "conv2d bf16: oneDNN could not create a convolution for " << pr.to_string() << ": "
                                                                                         << e.what());
    }
    return out;
  }

  std::mutex mutex_;
  std::map<std::tuple<std::string, int, bool>, std::unique_ptr<Prims>> cache_;
};

void run(const Prims& p, const std::unordered_map<int, memory>& args) { onednn::execute(p.prim, args); }

memory mem(const memory::desc& md, const void* p) { return onednn::wrap(md, p); }

template <typename A>
void host_only(const A& t, const char* what) {
  MAGMADNN_CHECK(!t.on_device(), NotSupportedError,
                 what << ": oneDNN's bf16 convolution takes host tensors; device tensors go through "
                         "conv2d_*_mixed (conv_mixed.h, cuDNN)");
}

}  // namespace

Tensor<float> conv2d_forward_bf16(const Tensor<bfloat16>& x, const Tensor<bfloat16>& w, const Tensor<float>* bias,
                                  const ConvParams& params) {
  host_only(x, "conv2d bf16");
  host_only(w, "conv2d bf16");
  const ConvProblem pr = make_problem(x.shape(), w.shape(), params);
  if (bias) {
    host_only(*bias, "conv2d bf16");
    MAGMADNN_CHECK(bias->shape() == Shape{pr.k}, ShapeError,
                   "conv2d bf16: bias " << bias->shape() << " must be {" << pr.k << "} for filters " << w.shape());
  }
  if (!bf16_conv_native()) return conv2d_forward(x.cast<float>(), w.cast<float>(), bias, params);
  Tensor<float> y(pr.y_shape(), x.get_memory_type(), x.get_device_id());
  const Prims& p = Bf16Convs::instance().get(pr, Pass3::Forward, bias != nullptr);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mem(p.x_md, x.data())},
                                       {DNNL_ARG_WEIGHTS, mem(p.w_md, w.data())},
                                       {DNNL_ARG_DST, mem(p.y_md, y.mutable_data())}};
  if (bias) args.emplace(DNNL_ARG_BIAS, mem(p.bias_md, bias->data()));
  run(p, args);
  return y;
}

Tensor<float> conv2d_backward_data_bf16(const Tensor<bfloat16>& dy, const Tensor<bfloat16>& w, const Shape& x_shape,
                                        const ConvParams& params) {
  host_only(dy, "conv2d bf16 backward data");
  host_only(w, "conv2d bf16 backward data");
  const ConvProblem pr = make_problem(x_shape, w.shape(), params);
  MAGMADNN_CHECK(dy.shape() == pr.y_shape(), ShapeError,
                 "conv2d bf16 backward data: dy " << dy.shape() << " must be " << pr.y_shape() << " for input "
                                                  << x_shape << " and filters " << w.shape());
  if (!bf16_conv_native()) return conv2d_backward_data(dy.cast<float>(), w.cast<float>(), x_shape, params);
  Tensor<float> dx(x_shape, dy.get_memory_type(), dy.get_device_id());
  const Prims& p = Bf16Convs::instance().get(pr, Pass3::BackwardData, false);
  run(p, {{DNNL_ARG_DIFF_DST, mem(p.y_md, dy.data())},
          {DNNL_ARG_WEIGHTS, mem(p.w_md, w.data())},
          {DNNL_ARG_DIFF_SRC, mem(p.x_md, dx.mutable_data())}});
  return dx;
}

Tensor<float> conv2d_backward_filter_bf16(const Tensor<bfloat16>& x, const Tensor<bfloat16>& dy,
                                          const Shape& w_shape, const ConvParams& params, Tensor<float>* db) {
  host_only(x, "conv2d bf16 backward filter");
  host_only(dy, "conv2d bf16 backward filter");
  const ConvProblem pr = make_problem(x.shape(), w_shape, params);
  MAGMADNN_CHECK(dy.shape() == pr.y_shape(), ShapeError,
                 "conv2d bf16 backward filter: dy " << dy.shape() << " must be " << pr.y_shape() << " for input "
                                                    << x.shape() << " and filters " << w_shape);
  if (!bf16_conv_native())
    return conv2d_backward_filter(x.cast<float>(), dy.cast<float>(), w_shape, params, Algo::Auto, db);
  Tensor<float> dw(w_shape, x.get_memory_type(), x.get_device_id());
  if (db && db->shape() != Shape{pr.k}) *db = Tensor<float>(Shape{pr.k}, x.get_memory_type(), x.get_device_id());
  const Prims& p = Bf16Convs::instance().get(pr, Pass3::BackwardFilter, db != nullptr);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mem(p.x_md, x.data())},
                                       {DNNL_ARG_DIFF_DST, mem(p.y_md, dy.data())},
                                       {DNNL_ARG_DIFF_WEIGHTS, mem(p.w_md, dw.mutable_data())}};
  if (db) args.emplace(DNNL_ARG_DIFF_BIAS, mem(p.bias_md, db->mutable_data()));
  run(p, args);
  return dw;
}

namespace {

std::atomic<Bf16ConvPolicy> g_policy{Bf16ConvPolicy::Timed};

// Best of a few runs of `f`, after one to warm up (primitive creation).
template <typename F>
double best_seconds(F&& f) {
  f();
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// One pass in bf16 on filler data, the casts of both of its operands from
// float included (the training step pays them; cached copies make that an
// upper bound).
double time_bf16_pass(const ConvProblem& pr, Pass pass) {
  Tensor<float> xf(pr.x_shape(), HOST), wf(pr.w_shape(), HOST), yf(pr.y_shape(), HOST);
  math::fill(xf, 0.5f);
  math::fill(wf, 0.25f);
  math::fill(yf, 0.125f);
  switch (pass) {
    case Pass::Forward:
      return best_seconds([&] { conv2d_forward_bf16(xf.cast<bfloat16>(), wf.cast<bfloat16>(), nullptr, pr.geom); });
    case Pass::BackwardData:
      return best_seconds(
          [&] { conv2d_backward_data_bf16(yf.cast<bfloat16>(), wf.cast<bfloat16>(), pr.x_shape(), pr.geom); });
    case Pass::BackwardFilter:
      return best_seconds(
          [&] { conv2d_backward_filter_bf16(xf.cast<bfloat16>(), yf.cast<bfloat16>(), pr.w_shape(), pr.geom); });
  }
  return 1e30;
}

}  // namespace

void set_bf16_conv_policy(Bf16ConvPolicy p) { g_policy = p; }
Bf16ConvPolicy bf16_conv_policy() { return g_policy; }

bool low_precision_conv_by_rule(const ConvProblem& prob) {
  const std::int64_t groups = std::max<std::int64_t>(1, prob.geom.groups);
  return prob.c / groups >= kLowPrecisionConvMinChannels && prob.k / groups >= kLowPrecisionConvMinChannels;
}

bool bf16_conv_native() {
  // Asked once, of a 1x1 convolution of a 1x1x2x2 input.
  static const bool native = [] {
    const memory::desc x({1, 1, 2, 2}, dt::bf16, tag::nchw), w({1, 1, 1, 1}, dt::bf16, tag::oihw);
    const memory::desc y({1, 1, 2, 2}, dt::f32, tag::nchw);
    try {
      onednn_compat::conv_forward_pd(onednn::engine(), dnnl::prop_kind::forward_training,
                                     dnnl::algorithm::convolution_direct, x, w, nullptr, y,
                                     {{1, 1}, {0, 0}, {0, 0}, {0, 0}});
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return native;
}

bool bf16_conv_pays(const ConvProblem& prob, Pass pass) {
  if (g_policy == Bf16ConvPolicy::Always) return true;
  if (!bf16_conv_native()) return false;  // widened to float: never faster than float
  if (deterministic_algorithms()) return low_precision_conv_by_rule(prob);
  static std::mutex mutex;
  static std::map<std::pair<std::string, int>, bool> decided;
  const auto key = std::make_pair(prob.to_string(), static_cast<int>(pass));
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = decided.find(key);
    if (it != decided.end()) return it->second;
  }
  choose<float>(prob, pass, DeviceKind::CPU);
  const std::optional<Choice> c = cached_choice<float>(prob, pass, DeviceKind::CPU);
  // A forced float algorithm has no time to compare against: the table's
  // word (bf16) stands.
  const bool pays = !c || c->seconds <= 0 || time_bf16_pass(prob, pass) < c->seconds;
  std::lock_guard<std::mutex> lock(mutex);
  decided.emplace(key, pays);
  return pays;
}

}  // namespace magmadnn::conv
