// oneDNN's pooling primitives (CPU, float), a candidate that pool_chooser.h
// times against our own pooling per problem.
//
// The tensors stay NCHW: pooling is one pass over memory, and a reorder into
// a blocked layout and back would cost more than the pooling. Max pooling's
// argmax keeps our convention (the flat index in the input plane, see
// pool_impl.h), so either implementation can run the backward pass of the
// other's forward: oneDNN's workspace (the index within the window, one byte
// or one int per output) is converted into it after the forward and back
// before the backward. Both conversions are a pass over the output, a
// quarter of the input for 2x2 windows.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "magmadnn/conv/onednn_util.h"
#include "magmadnn/conv/pool_impl.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::conv {
namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

struct PoolPlan {
  dnnl::pooling_forward train, infer;  // train writes the workspace (max only)
  dnnl::pooling_backward backward;
  memory::desc x, y, ws;               // ws empty for average pooling
};

std::string key_of(const Shape& x, const PoolParams& p) {
  std::string k;
  for (std::int64_t d : {x[0], x[1], x[2], x[3], p.kernel_h, p.kernel_w, p.pad_h, p.pad_w, p.stride_h, p.stride_w})
    k += std::to_string(d) + ",";
  return k + std::to_string(static_cast<int>(p.mode)) + (p.count_include_pad ? "i" : "e");
}

// Null when oneDNN has no primitive for the problem, or (max pooling) its
// workspace is not one index per output in NCHW order, which the argmax
// conversion relies on.
std::unique_ptr<PoolPlan> make_plan(const Shape& xs, const PoolParams& p) {
  const Shape ys = pool_output_shape(xs, p);
  const memory::dims x_dims{xs[0], xs[1], xs[2], xs[3]}, y_dims{ys[0], ys[1], ys[2], ys[3]};
  const memory::dims strides{p.stride_h, p.stride_w}, kernel{p.kernel_h, p.kernel_w}, pad_l{p.pad_h, p.pad_w};
  // The bottom/right padding that makes oneDNN's output size ours (at most pad).
  const memory::dims pad_r{(ys[2] - 1) * p.stride_h + p.kernel_h - xs[2] - p.pad_h,
                           (ys[3] - 1) * p.stride_w + p.kernel_w - xs[3] - p.pad_w};
  const auto alg = p.mode == PoolMode::Max ? dnnl::algorithm::pooling_max
                   : p.count_include_pad   ? dnnl::algorithm::pooling_avg_include_padding
                                           : dnnl::algorithm::pooling_avg_exclude_padding;
  auto plan = std::make_unique<PoolPlan>();
  plan->x = memory::desc(x_dims, dt::f32, tag::nchw);
  plan->y = memory::desc(y_dims, dt::f32, tag::nchw);
  dnnl::engine& e = onednn::engine();
  try {
    const onednn_compat::PoolShape shape{strides, kernel, pad_l, pad_r};
    const auto train = onednn_compat::pooling_forward_pd(e, dnnl::prop_kind::forward_training, alg, plan->x,
                                                         plan->y, shape);
    const auto infer = onednn_compat::pooling_forward_pd(e, dnnl::prop_kind::forward_inference, alg, plan->x,
                                                         plan->y, shape);
    const auto back = onednn_compat::pooling_backward_pd(e, alg, plan->x, plan->y, shape, train);
    plan->train = dnnl::pooling_forward(train);
    plan->infer = dnnl::pooling_forward(infer);
    plan->backward = dnnl::pooling_backward(back);
    plan->ws = train.workspace_desc();
  } catch (const dnnl::error&) {
    return nullptr;
  }
  if (p.mode == PoolMode::Max) {
    const dt wt = onednn_compat::data_type(plan->ws);
    if ((wt != dt::u8 && wt != dt::s32) || plan->ws != memory::desc(y_dims, wt, tag::nchw)) return nullptr;
  }
  return plan;
}

// Converts between oneDNN's window index (kh * KW + kw) and our plane index
// ((h0 + kh) * W + (w0 + kw)) for every output of the batch.
struct IndexMap {
  std::int64_t planes, oh, ow, w, kw, sh, sw, ph, pw;
  IndexMap(const Shape& xs, const PoolParams& p, const Shape& ys)
      : planes(xs[0] * xs[1]), oh(ys[2]), ow(ys[3]), w(xs[3]), kw(p.kernel_w), sh(p.stride_h), sw(p.stride_w),
        ph(p.pad_h), pw(p.pad_w) {}
  std::int64_t outputs() const { return planes * oh * ow; }
  std::int32_t to_plane(std::int64_t o, std::int32_t window) const {
    const std::int64_t i = o / ow % oh, j = o % ow;
    return static_cast<std::int32_t>((i * sh - ph + window / kw) * w + (j * sw - pw + window % kw));
  }
  std::int32_t to_window(std::int64_t o, std::int32_t plane) const {
    const std::int64_t i = o / ow % oh, j = o % ow;
    return static_cast<std::int32_t>((plane / w - (i * sh - ph)) * kw + (plane % w - (j * sw - pw)));
  }
};

class OnednnPool final : public PoolImpl<float> {
 public:
  DeviceKind device() const noexcept override { return DeviceKind::CPU; }
  const char* name() const noexcept override { return "onednn"; }
  bool reference() const noexcept override { return false; }
  bool supports(const Shape& xs, const PoolParams& p) const override { return plan(xs, p) != nullptr; }

  void forward(const Shape& xs, const PoolParams& p, const float* x, float* y, std::int32_t* argmax) override {
    const PoolPlan& pl = checked(xs, p);
    const bool keep = argmax && p.mode == PoolMode::Max;
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, onednn::wrap(pl.x, x)}, {DNNL_ARG_DST, onednn::wrap(pl.y, y)}};
    // The workspace is written straight into argmax (one byte or one int per
    // output fits in its int per output) and widened in place, from the last
    // output down so that no index is overwritten before it is read.
    if (keep) args.emplace(DNNL_ARG_WORKSPACE, onednn::wrap(pl.ws, argmax));
    run(keep ? pl.train : pl.infer, args);
    if (!keep) return;
    const IndexMap m(xs, p, pool_output_shape(xs, p));
    if (onednn_compat::data_type(pl.ws) == dt::u8) {
      const auto* bytes = reinterpret_cast<const std::uint8_t*>(argmax);
      for (std::int64_t o = m.outputs() - 1; o >= 0; --o) argmax[o] = m.to_plane(o, bytes[o]);
    } else {
      for (std::int64_t o = 0; o < m.outputs(); ++o) argmax[o] = m.to_plane(o, argmax[o]);
    }
  }

  void backward(const Shape& xs, const PoolParams& p, const float* x, const float* dy, const std::int32_t* argmax,
                float* dx) override {
    const PoolPlan& pl = checked(xs, p);
    std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, onednn::wrap(pl.y, dy)},
                                         {DNNL_ARG_DIFF_SRC, onednn::wrap(pl.x, dx)}};
    thread_local std::vector<std::int32_t> ws;  // grows to the largest batch once, then reused
    if (p.mode == PoolMode::Max) {
      const IndexMap m(xs, p, pool_output_shape(xs, p));
      ws.resize(static_cast<std::size_t>(m.outputs()));
      if (argmax) {
        if (onednn_compat::data_type(pl.ws) == dt::u8) {
          auto* bytes = reinterpret_cast<std::uint8_t*>(ws.data());
          for (std::int64_t o = 0; o < m.outputs(); ++o) bytes[o] = static_cast<std::uint8_t>(m.to_window(o, argmax[o]));
        } else {
          for (std::int64_t o = 0; o < m.outputs(); ++o) ws[o] = m.to_window(o, argmax[o]);
        }
      } else {
        // No saved argmax: find the maxima again, into the workspace.
        thread_local std::vector<float> y;
        y.resize(ws.size());
        run(pl.train, {{DNNL_ARG_SRC, onednn::wrap(pl.x, x)},
                       {DNNL_ARG_DST, onednn::wrap(pl.y, y.data())},
                       {DNNL_ARG_WORKSPACE, onednn::wrap(pl.ws, ws.data())}});
      }
      args.emplace(DNNL_ARG_WORKSPACE, onednn::wrap(pl.ws, ws.data()));
    }
    run(pl.backward, args);
  }

 private:
  static void run(const dnnl::primitive& prim, const std::unordered_map<int, memory>& args) {
    try {
      onednn::execute(prim, args);
    } catch (const dnnl::error& e) {
      MAGMADNN_THROW(DeviceError, "pooling onednn: executing a primitive failed: " << e.what());
    }
  }

  const PoolPlan& checked(const Shape& xs, const PoolParams& p) const {
    const PoolPlan* pl = plan(xs, p);
    MAGMADNN_CHECK(pl != nullptr, NotSupportedError,
                   "pooling onednn: oneDNN has no primitive for input " << xs << ", window " << p.kernel_h << "x"
                                                                        << p.kernel_w);
    return *pl;
  }

  // Made once per problem; a problem oneDNN cannot do is remembered as null.
  const PoolPlan* plan(const Shape& xs, const PoolParams& p) const {
    std::lock_guard lock(mu_);
    const std::string key = key_of(xs, p);
    auto it = plans_.find(key);
    if (it == plans_.end()) it = plans_.emplace(key, make_plan(xs, p)).first;
    return it->second.get();
  }

  mutable std::mutex mu_;
  mutable std::map<std::string, std::unique_ptr<PoolPlan>> plans_;
};

struct Registrar {
  Registrar() { detail::register_pool_impl<float>(std::make_unique<OnednnPool>()); }
} const registrar;

}  // namespace
}  // namespace magmadnn::conv
