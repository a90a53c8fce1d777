// oneDNN bf16 convolutions, in one of two activation layouts per problem:
//  - NCHW (blocked layouts off, or no native bf16): plain layouts (nchw,
//    oihw/goihw) are handed to oneDNN as they are, which runs its gemm
//    convolution on them;
//  - channels last (either activation in kChannelsLast): the activations in
//    nhwc and the weights in the layout oneDNN asks for, which is what its
//    brgconv kernels (AMX, AVX-512 BF16) take. Measured on ResNet-50's 23
//    convolutions at batch 32 on a 2-core Xeon with AMX, all three passes:
//    1.00 s in nhwc against 1.80 s in NCHW (docs/notes/benchmarks-resnet.md).
// An operand that arrives in the other layout (the stem's NCHW image) is
// reordered on the way in, a result on the way out; weights, which the
// caller keeps in oihw, are reordered per call (a few MB).
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
#include "magmadnn/conv/layout.h"
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

// A pass's primitive, the descriptions of what it reads and writes, and of
// the caller's x, w and y (its layouts, the operands' types).
struct Prims {
  dnnl::primitive prim;
  memory::desc x_md, w_md, y_md, bias_md;
  memory::desc x_user, w_user, y_user;
  bool gemm = false;  // a matmul of the activations as matrices (as_gemm)
};

// Whether `pass` of `pr` runs as one bf16 matmul rather than a
// convolution: the backward passes of a 1x1 convolution of stride 1
// without padding or groups, both activations channels last, and no bias
// gradient. Its activations are matrices {N·H·W, C} and {N·H·W, K}, its
// filter {K, C}; dx = dy · w and dw = dyᵀ · x, which oneDNN's matmul
// computed on AMX in 0.79x (data) and 0.51x (filter) of its convolution's
// time, summed over ResNet-50's 1x1 layers (docs/notes/benchmarks-resnet.md).
// Forward ran as fast either way.
bool as_gemm(const ConvProblem& pr, Pass3 pass, bool bias) {
  const auto& g = pr.geom;
  return pass != Pass3::Forward && !bias && pr.x_block == kChannelsLast && pr.y_block == kChannelsLast &&
         pr.r == 1 && pr.s == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0 &&
         g.groups == 1;
}

// Backward data: dx {M, C} (float) = dy {M, K} · w {K, C}. Backward filter:
// dw {K, C} (float, = OIHW of a 1x1 filter) = dyᵀ · x, x {M, C}. Operands bf16.
std::unique_ptr<Prims> gemm_pass(const ConvProblem& pr, Pass3 pass) {
  const std::int64_t m = pr.n * pr.h * pr.w;
  auto out = std::make_unique<Prims>();
  out->gemm = true;
  const bool data = pass == Pass3::BackwardData;
  out->y_md = memory::desc(data ? memory::dims{m, pr.k} : memory::dims{pr.k, m}, dt::bf16, data ? tag::ab : tag::ba);
  out->x_md = memory::desc({m, pr.c}, data ? dt::f32 : dt::bf16, tag::ab);
  out->w_md = memory::desc({pr.k, pr.c}, data ? dt::bf16 : dt::f32, tag::ab);
  try {
    const auto pd = data ? onednn_compat::matmul_pd(onednn::engine(), out->y_md, out->w_md, nullptr, out->x_md)
                         : onednn_compat::matmul_pd(onednn::engine(), out->y_md, out->x_md, nullptr, out->w_md);
    out->prim = dnnl::matmul(pd);
  } catch (const dnnl::error& e) {
    MAGMADNN_THROW(DeviceError, "conv2d bf16: oneDNN could not create a matmul for a pass of " << pr.to_string()
                                                                                            << ": " << e.what());
  }
  return out;
}

// The layout a problem's primitive runs in: channels last when either
// activation is, else NCHW.
int run_layout(const ConvProblem& pr) {
  return pr.x_block == kChannelsLast || pr.y_block == kChannelsLast ? kChannelsLast : 0;
}

class Bf16Convs {
 public:
  static Bf16Convs& instance() {
    static Bf16Convs inst;
    return inst;
  }

  // The primitive of one pass of `pr` (its layouts included); `bias`
  // selects forward with a bias and backward_filter with a bias gradient.
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

  static std::unique_ptr<Prims> create(const ConvProblem& pr, Pass3 pass, bool bias) {
    if (as_gemm(pr, pass, bias)) return gemm_pass(pr, pass);
    const memory::dims x_dims{pr.n, pr.c, pr.h, pr.w}, y_dims{pr.n, pr.k, pr.p, pr.q};
    const memory::dims w_dims = onednn::weight_dims(pr);
    const tag wtag = onednn::weight_tag(pr);
    const tag act = onednn::activation_tag(run_layout(pr));
    // Weights as oneDNN wants them where it runs channels last; as given in NCHW.
    const tag wrun = run_layout(pr) == kChannelsLast ? tag::any : wtag;
    const onednn::Geometry geo = onednn::geometry(pr);
    dnnl::engine& engine_ = onednn::engine();
    auto out = std::make_unique<Prims>();
    // Operands read in bf16, results written in float.
    const bool fwd = pass == Pass3::Forward, bwd_d = pass == Pass3::BackwardData;
    const dt xt = fwd || !bwd_d ? dt::bf16 : dt::f32, wt = pass == Pass3::BackwardFilter ? dt::f32 : dt::bf16;
    const dt yt = fwd ? dt::f32 : dt::bf16;
    out->x_user = memory::desc(x_dims, xt, onednn::activation_tag(pr.x_block));
    out->y_user = memory::desc(y_dims, yt, onednn::activation_tag(pr.y_block));
    out->w_user = memory::desc(w_dims, wt, wtag);
    out->x_md = memory::desc(x_dims, xt, act);
    out->y_md = memory::desc(y_dims, yt, act);
    const memory::desc w_md(w_dims, wt, wrun);
    if (bias) out->bias_md = memory::desc({pr.k}, dt::f32, tag::x);
    try {
      // The backward passes need a forward primitive descriptor as a hint.
      const memory::desc hint_x(x_dims, dt::bf16, act), hint_w(w_dims, dt::bf16, wrun), hint_y(y_dims, dt::f32, act);
      const auto direct = dnnl::algorithm::convolution_direct;
      const auto prop = dnnl::prop_kind::forward_training;
      const dnnl::convolution_forward::primitive_desc hint =
          onednn_compat::conv_forward_pd(engine_, prop, direct, hint_x, hint_w, nullptr, hint_y, geo);
      switch (pass) {
        case Pass3::Forward: {
          const auto pd = bias ? onednn_compat::conv_forward_pd(engine_, prop, direct, out->x_md, w_md,
                                                                &out->bias_md, out->y_md, geo)
                               : hint;
          out->prim = dnnl::convolution_forward(pd), out->w_md = pd.weights_desc();
          break;
        }
        case Pass3::BackwardData: {
          const auto pd = onednn_compat::conv_backward_data_pd(engine_, direct, out->x_md, w_md, out->y_md, geo, hint);
          out->prim = dnnl::convolution_backward_data(pd), out->w_md = pd.weights_desc();
          break;
        }
        case Pass3::BackwardFilter: {
          const auto pd = onednn_compat::conv_backward_weights_pd(engine_, direct, out->x_md, w_md,
                                                                  bias ? &out->bias_md : nullptr, out->y_md, geo, hint);
          out->prim = dnnl::convolution_backward_weights(pd), out->w_md = pd.diff_weights_desc();
          break;
        }
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

// The caller's buffer `p` (described by `user`) as the primitive reads it
// (`want`): the buffer itself, or a reordered copy oneDNN allocates.
memory operand(const memory::desc& user, const void* p, const memory::desc& want) {
  memory m = onednn::wrap(user, p);
  if (user == want) return m;
  memory copy(want, onednn::engine());
  onednn::execute(dnnl::reorder(m, copy), {{DNNL_ARG_FROM, m}, {DNNL_ARG_TO, copy}});
  return copy;
}

// A result the primitive writes as `made` into the caller's buffer `p`
// (described by `user`): the buffer itself, or a temporary that finish() reorders into it.
struct Result {
  memory made, user;
  Result(const memory::desc& made_md, const memory::desc& user_md, void* p) : user(onednn::wrap(user_md, p)) {
    made = made_md == user_md ? user : memory(made_md, onednn::engine());
  }
  void finish() {
    if (made.get_data_handle() != user.get_data_handle())
      onednn::execute(dnnl::reorder(made, user), {{DNNL_ARG_FROM, made}, {DNNL_ARG_TO, user}});
  }
};

template <typename A>
void host_only(const A& t, const char* what) {
  MAGMADNN_CHECK(!t.on_device(), NotSupportedError,
                 what << ": oneDNN's bf16 convolution takes host tensors; device tensors go through "
                         "conv2d_*_mixed (conv_mixed.h, cuDNN)");
}

// The problem of x and w, its activations in the layouts `blocks`.
ConvProblem problem(const Shape& x, const Shape& w, const ConvParams& params, Blocks blocks) {
  ConvProblem pr = make_problem(x, w, params);
  for (int b : {blocks.x, blocks.y}) {
    MAGMADNN_CHECK(b == 0 || b == kChannelsLast, ValueError,
                   "conv2d bf16: activations are NCHW or channels last, not channel block " << b);
  }
  MAGMADNN_CHECK(blocks.x == 0 || blockable(x, blocks.x), ValueError,
                 "conv2d bf16: x " << x << " cannot be held channels last");
  MAGMADNN_CHECK(blocks.y == 0 || blockable(pr.y_shape(), blocks.y), ValueError,
                 "conv2d bf16: y " << pr.y_shape() << " cannot be held channels last");
  pr.x_block = blocks.x, pr.y_block = blocks.y;
  return pr;
}

}  // namespace

Tensor<float> conv2d_forward_bf16(const Tensor<bfloat16>& x, const Tensor<bfloat16>& w, const Tensor<float>* bias,
                                  const ConvParams& params, Blocks blocks) {
  host_only(x, "conv2d bf16");
  host_only(w, "conv2d bf16");
  const ConvProblem pr = problem(x.shape(), w.shape(), params, blocks);
  if (bias) {
    host_only(*bias, "conv2d bf16");
    MAGMADNN_CHECK(bias->shape() == Shape{pr.k}, ShapeError,
                   "conv2d bf16: bias " << bias->shape() << " must be {" << pr.k << "} for filters " << w.shape());
  }
  if (!bf16_conv_native()) return conv2d_forward(x.cast<float>(), w.cast<float>(), bias, params, Algo::Auto, false,
                                                 true, blocks);
  Tensor<float> y(pr.y_shape(), x.get_memory_type(), x.get_device_id());
  const Prims& p = Bf16Convs::instance().get(pr, Pass3::Forward, bias != nullptr);
  Result out(p.y_md, p.y_user, y.mutable_data());
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, operand(p.x_user, x.data(), p.x_md)},
                                       {DNNL_ARG_WEIGHTS, operand(p.w_user, w.data(), p.w_md)},
                                       {DNNL_ARG_DST, out.made}};
  if (bias) args.emplace(DNNL_ARG_BIAS, onednn::wrap(p.bias_md, bias->data()));
  onednn::execute(p.prim, args);
  out.finish();
  return y;
}

Tensor<float> conv2d_backward_data_bf16(const Tensor<bfloat16>& dy, const Tensor<bfloat16>& w, const Shape& x_shape,
                                        const ConvParams& params, Blocks blocks) {
  host_only(dy, "conv2d bf16 backward data");
  host_only(w, "conv2d bf16 backward data");
  const ConvProblem pr = problem(x_shape, w.shape(), params, blocks);
  MAGMADNN_CHECK(dy.shape() == pr.y_shape(), ShapeError,
                 "conv2d bf16 backward data: dy " << dy.shape() << " must be " << pr.y_shape() << " for input "
                                                  << x_shape << " and filters " << w.shape());
  if (!bf16_conv_native())
    return conv2d_backward_data(dy.cast<float>(), w.cast<float>(), x_shape, params, Algo::Auto, blocks);
  Tensor<float> dx(x_shape, dy.get_memory_type(), dy.get_device_id());
  const Prims& p = Bf16Convs::instance().get(pr, Pass3::BackwardData, false);
  if (p.gemm) {
    onednn::execute(p.prim, {{DNNL_ARG_SRC, onednn::wrap(p.y_md, dy.data())},
                             {DNNL_ARG_WEIGHTS, onednn::wrap(p.w_md, w.data())},
                             {DNNL_ARG_DST, onednn::wrap(p.x_md, dx.mutable_data())}});
    return dx;
  }
  Result out(p.x_md, p.x_user, dx.mutable_data());
  onednn::execute(p.prim, {{DNNL_ARG_DIFF_DST, operand(p.y_user, dy.data(), p.y_md)},
                           {DNNL_ARG_WEIGHTS, operand(p.w_user, w.data(), p.w_md)},
                           {DNNL_ARG_DIFF_SRC, out.made}});
  out.finish();
  return dx;
}

Tensor<float> conv2d_backward_filter_bf16(const Tensor<bfloat16>& x, const Tensor<bfloat16>& dy,
                                          const Shape& w_shape, const ConvParams& params, Tensor<float>* db,
                                          Blocks blocks) {
  host_only(x, "conv2d bf16 backward filter");
  host_only(dy, "conv2d bf16 backward filter");
  const ConvProblem pr = problem(x.shape(), w_shape, params, blocks);
  MAGMADNN_CHECK(dy.shape() == pr.y_shape(), ShapeError,
                 "conv2d bf16 backward filter: dy " << dy.shape() << " must be " << pr.y_shape() << " for input "
                                                    << x.shape() << " and filters " << w_shape);
  if (!bf16_conv_native())
    return conv2d_backward_filter(x.cast<float>(), dy.cast<float>(), w_shape, params, Algo::Auto, db, blocks);
  Tensor<float> dw(w_shape, x.get_memory_type(), x.get_device_id());
  if (db && db->shape() != Shape{pr.k}) *db = Tensor<float>(Shape{pr.k}, x.get_memory_type(), x.get_device_id());
  const Prims& p = Bf16Convs::instance().get(pr, Pass3::BackwardFilter, db != nullptr);
  if (p.gemm) {
    onednn::execute(p.prim, {{DNNL_ARG_SRC, onednn::wrap(p.y_md, dy.data())},
                             {DNNL_ARG_WEIGHTS, onednn::wrap(p.x_md, x.data())},
                             {DNNL_ARG_DST, onednn::wrap(p.w_md, dw.mutable_data())}});
    return dw;
  }
  Result out(p.w_md, p.w_user, dw.mutable_data());
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, operand(p.x_user, x.data(), p.x_md)},
                                       {DNNL_ARG_DIFF_DST, operand(p.y_user, dy.data(), p.y_md)},
                                       {DNNL_ARG_DIFF_WEIGHTS, out.made}};
  if (db) args.emplace(DNNL_ARG_DIFF_BIAS, onednn::wrap(p.bias_md, db->mutable_data()));
  onednn::execute(p.prim, args);
  out.finish();
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
  const Blocks b{pr.x_block, pr.y_block};
  switch (pass) {
    case Pass::Forward:
      return best_seconds(
          [&] { conv2d_forward_bf16(xf.cast<bfloat16>(), wf.cast<bfloat16>(), nullptr, pr.geom, b); });
    case Pass::BackwardData:
      return best_seconds(
          [&] { conv2d_backward_data_bf16(yf.cast<bfloat16>(), wf.cast<bfloat16>(), pr.x_shape(), pr.geom, b); });
    case Pass::BackwardFilter:
      return best_seconds([&] {
        conv2d_backward_filter_bf16(xf.cast<bfloat16>(), yf.cast<bfloat16>(), pr.w_shape(), pr.geom, nullptr, b);
      });
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
