// oneDNN's convolution primitives as a chooser candidate (float, CPU).
//
// Every operand is described to oneDNN with format_tag::any, so it picks the
// layout its fastest kernel wants (on AVX-512, channels blocked by 16); the
// caller's buffers (OIHW weights; NCHW or, for a blocked problem, the
// blocked activations of conv/layout.h) are reordered into that layout at
// the start of the call and the result reordered back at its end, inside
// the caller's workspace. Where oneDNN's layout is the caller's, no reorder
// is made: a network that keeps blocked activations reorders only weights.
// The primitives, their reorders and the workspace layout are made once per
// (problem, pass, ReLU, bias) and cached, so a training step creates nothing; the
// first call of a problem (the chooser's warm-up) pays for the creation.
// A call without a bias (forward) or without a wanted bias gradient (filter
// pass) gets a primitive made without one: oneDNN's filter pass sums the
// bias gradient in a pass over dy of its own, 0.8-1.5 ms of the 5.6 ms
// filter pass on resnet's 16-channel layer (AVX2, batch 128), which
// networks whose convolutions feed a batch normalisation never use.
// forward_relu() adds oneDNN's ReLU post-op, so conv + bias + ReLU is one
// pass over the output.
//
// Only float: oneDNN has no double convolution, so double keeps our own
// algorithms (and with them gradcheck in double).
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <algorithm>

#include "magmadnn/conv/algorithm.h"
#include "magmadnn/conv/chooser.h"
#include "magmadnn/conv/input_states.h"
#include "magmadnn/backend/registry.h"
#include "magmadnn/conv/onednn_util.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::conv {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
constexpr std::size_t kAlign = 64;

std::size_t round_up(std::size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

// One operand of a pass: the caller's plain layout, the primitive's, and the
// reorder between them (absent when they are the same).
struct Operand {
  int arg = 0;
  memory::desc plain, prim;
  std::optional<dnnl::reorder> reorder;
  std::size_t offset = 0;  // of the reordered copy in the workspace
};

// Everything one pass of one problem needs, made once.
struct Plan {
  dnnl::primitive prim;
  Operand in0, in1, out;          // forward: x, w -> y; backward data: dy, w -> dx; backward filter: x, dy -> dw
  memory::desc bias;              // bias (forward) or bias gradient (backward filter), plain; empty if none
  std::size_t scratch_offset = 0;
  memory::desc scratch;
  std::size_t workspace = 0;      // bytes, including alignment slack
};

// Lays out an operand's reordered copy in the workspace when the primitive's
// layout differs from ours. `into_prim`: the reorder goes plain -> primitive
// (inputs), else primitive -> plain (the output).
Operand make_operand(int arg, const memory::desc& plain, const memory::desc& prim, bool into_prim,
                     std::size_t& bytes) {
  Operand o{arg, plain, prim, std::nullopt, 0};
  if (prim != plain) {
    o.offset = bytes;
    bytes += round_up(prim.get_size());
    dnnl::engine& e = onednn::engine();
    o.reorder = into_prim ? dnnl::reorder(dnnl::reorder::primitive_desc(e, plain, e, prim))
                          : dnnl::reorder(dnnl::reorder::primitive_desc(e, prim, e, plain));
  }
  return o;
}

std::unique_ptr<Plan> make_plan(const ConvProblem& pr, Pass pass, bool relu, bool with_bias) {
  const bool bias = with_bias && pass != Pass::BackwardData;
  using dt = memory::data_type;
  const onednn::Geometry g = onednn::geometry(pr);
  const memory::dims x_dims{pr.n, pr.c, pr.h, pr.w}, y_dims{pr.n, pr.k, pr.p, pr.q};
  const memory::dims w_dims = onednn::weight_dims(pr);
  // "plain": the caller's layout, NCHW or blocked (conv/layout.h).
  const memory::desc x_plain(x_dims, dt::f32, onednn::activation_tag(pr.x_block));
  const memory::desc y_plain(y_dims, dt::f32, onednn::activation_tag(pr.y_block));
  const memory::desc w_plain(w_dims, dt::f32, onednn::weight_tag(pr));
  const memory::desc x_any(x_dims, dt::f32, tag::any), y_any(y_dims, dt::f32, tag::any);
  const memory::desc w_any(w_dims, dt::f32, tag::any);
  const memory::desc b_md = bias ? memory::desc({pr.k}, dt::f32, tag::x) : memory::desc();
  dnnl::engine& e = onednn::engine();
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // from our workspace, so concurrent calls are safe

  auto plan = std::make_unique<Plan>();
  std::size_t bytes = 0;
  const auto alg = dnnl::algorithm::convolution_direct;  // oneDNN picks its kernel (jit, gemm, ...) within it
  // The backward passes need the forward primitive they belong to as a hint.
  dnnl::primitive_attr fwd_attr = attr;
  if (relu) {
    dnnl::post_ops ops;
    onednn_compat::append_eltwise(ops, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    fwd_attr.set_post_ops(ops);
  }
  const dnnl::convolution_forward::primitive_desc fwd = onednn_compat::conv_forward_pd(
      e, dnnl::prop_kind::forward_training, alg, x_any, w_any, bias ? &b_md : nullptr, y_any, g, fwd_attr);
  switch (pass) {
    case Pass::Forward:
      plan->prim = dnnl::convolution_forward(fwd);
      plan->in0 = make_operand(DNNL_ARG_SRC, x_plain, fwd.src_desc(), true, bytes);
      plan->in1 = make_operand(DNNL_ARG_WEIGHTS, w_plain, fwd.weights_desc(), true, bytes);
      plan->out = make_operand(DNNL_ARG_DST, y_plain, fwd.dst_desc(), false, bytes);
      plan->scratch = fwd.scratchpad_desc();
      break;
    case Pass::BackwardData: {
      const dnnl::convolution_backward_data::primitive_desc pd =
          onednn_compat::conv_backward_data_pd(e, alg, x_any, w_any, y_any, g, fwd, attr);
      plan->prim = dnnl::convolution_backward_data(pd);
      plan->in0 = make_operand(DNNL_ARG_DIFF_DST, y_plain, pd.diff_dst_desc(), true, bytes);
      plan->in1 = make_operand(DNNL_ARG_WEIGHTS, w_plain, pd.weights_desc(), true, bytes);
      plan->out = make_operand(DNNL_ARG_DIFF_SRC, x_plain, pd.diff_src_desc(), false, bytes);
      plan->scratch = pd.scratchpad_desc();
      break;
    }
    case Pass::BackwardFilter: {
      const dnnl::convolution_backward_weights::primitive_desc pd = onednn_compat::conv_backward_weights_pd(
          e, alg, x_any, w_any, bias ? &b_md : nullptr, y_any, g, fwd, attr);
      plan->prim = dnnl::convolution_backward_weights(pd);
      plan->in0 = make_operand(DNNL_ARG_SRC, x_plain, pd.src_desc(), true, bytes);
      plan->in1 = make_operand(DNNL_ARG_DIFF_DST, y_plain, pd.diff_dst_desc(), true, bytes);
      plan->out = make_operand(DNNL_ARG_DIFF_WEIGHTS, w_plain, pd.diff_weights_desc(), false, bytes);
      plan->scratch = pd.scratchpad_desc();
      break;
    }
  }
  plan->bias = b_md;
  plan->scratch_offset = bytes;
  bytes += round_up(plan->scratch.get_size());
  plan->workspace = bytes + kAlign;  // the caller's pointer may be unaligned
  return plan;
}

// Input operands reordered into a primitive's layout, kept for a later pass
// of the same step that reads the same contents, most recently used first.
// An entry is found only by the array state it was made from (write stamp,
// address) and its layout, so a changed or reused buffer never matches.
// The bytes kept are capped: past the cap the least recently used entries
// go, and a pass that misses reorders as if nothing were kept. Inference
// through a node in eval mode keeps nothing (conv2d_forward's keep_inputs);
// other forward-only use costs at most the cap in memory and nothing in time.
class KeptInputs {
 public:
  // The copy lives in the CPU backend's caching pool, so that a step's
  // copies reuse the last step's memory: fresh pages would cost a page fault
  // per 4 KB, more than the reorder they save.
  struct Entry {
    std::uint64_t stamp = 0;
    const void* data = nullptr;
    memory::desc desc;
    void* mem = nullptr;
    std::size_t bytes = 0;
    Entry() = default;
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    ~Entry() {
      if (mem) cpu_backend().deallocate(mem, bytes, 0);
    }
  };

  std::shared_ptr<Entry> find(std::uint64_t stamp, const void* data, const memory::desc& desc) {
    std::lock_guard lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if ((*it)->stamp == stamp && (*it)->data == data && (*it)->desc == desc) {
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front();
      }
    }
    return nullptr;
  }

  // A new entry (to be filled by the caller), or null when it alone would
  // exceed the cap.
  std::shared_ptr<Entry> add(std::uint64_t stamp, const void* data, const memory::desc& desc) {
    const std::size_t bytes = desc.get_size();
    if (bytes > kCapBytes) return nullptr;
    auto e = std::make_shared<Entry>();
    e->stamp = stamp;
    e->data = data;
    e->desc = desc;
    e->mem = cpu_backend().allocate(bytes, 0);
    e->bytes = bytes;
    std::lock_guard lock(mu_);
    total_ += bytes;
    entries_.push_front(e);
    while (total_ > kCapBytes) {
      total_ -= entries_.back()->bytes;
      entries_.pop_back();
    }
    return e;
  }

  std::size_t bytes() {
    std::lock_guard lock(mu_);
    return total_;
  }

  void drop(const std::shared_ptr<Entry>& e) {
    std::lock_guard lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (*it == e) {
        total_ -= e->bytes;
        entries_.erase(it);
        return;
      }
    }
  }

 private:
  // Room for the layer inputs of a small residual network at batch 128
  // (resnet keeps 27 MB from forward to backward, and one dy of 6.4 MB at a
  // time) without letting inference grow by much.
  static constexpr std::size_t kCapBytes = std::size_t{40} << 20;
  std::mutex mu_;
  std::list<std::shared_ptr<Entry>> entries_;
  std::size_t total_ = 0;
};

class OnednnConv final : public ConvAlgorithm<float> {
 public:
  Algo id() const noexcept override { return Algo::OneDNN; }
  DeviceKind device() const noexcept override { return DeviceKind::CPU; }

  bool supports(const ConvProblem& pr, Pass) const override {
    // oneDNN indexes with 32-bit offsets in places; stay well inside.
    constexpr std::int64_t kMax = std::int64_t{1} << 31;
    return pr.x_shape().numel() < kMax && pr.y_shape().numel() < kMax && pr.w_shape().numel() < kMax;
  }
  bool reads_blocked(const ConvProblem&, Pass) const override { return true; }  // described as they are

  std::size_t workspace_bytes(const ConvProblem& pr, Pass pass) const override {
    // The plans with and without a bias, and forward_relu's, may lay out
    // differently (oneDNN may pick another kernel): room for any of them.
    std::size_t bytes = 0;
    for (const bool bias : {false, true}) {
      if (pass == Pass::BackwardData && bias) continue;
      bytes = std::max(bytes, plan(pr, pass, false, bias).workspace);
      if (pass == Pass::Forward) bytes = std::max(bytes, plan(pr, pass, true, bias).workspace);
    }
    return bytes;
  }

  void forward(const ConvProblem& pr, const float* x, const float* w, const float* bias, float* y,
               void* ws) override {
    run(pr, plan(pr, Pass::Forward, false, bias != nullptr), Pass::Forward, x, w, y, bias, ws);
  }
  bool forward_relu(const ConvProblem& pr, const float* x, const float* w, const float* bias, float* y,
                    void* ws) override {
    run(pr, plan(pr, Pass::Forward, true, bias != nullptr), Pass::Forward, x, w, y, bias, ws);
    return true;
  }
  void backward_data(const ConvProblem& pr, const float* dy, const float* w, float* dx, void* ws) override {
    run(pr, plan(pr, Pass::BackwardData, false, false), Pass::BackwardData, dy, w, dx, nullptr, ws);
  }
  void backward_filter(const ConvProblem& pr, const float* x, const float* dy, float* dw, float* db,
                       void* ws) override {
    run(pr, plan(pr, Pass::BackwardFilter, false, db != nullptr), Pass::BackwardFilter, x, dy, dw, db, ws);
  }

 private:
  const Plan& plan(const ConvProblem& pr, Pass pass, bool relu, bool bias) const {
    std::lock_guard lock(mu_);
    auto key = std::make_tuple(pr.to_string(), static_cast<int>(pass), relu, bias);
    auto it = plans_.find(key);
    if (it != plans_.end()) return *it->second;
    try {
      return *plans_.emplace(std::move(key), make_plan(pr, pass, relu, bias)).first->second;
    } catch (const dnnl::error& e) {
      MAGMADNN_THROW(DeviceError, "conv2d onednn: oneDNN could not create the " << pass_name(pass) << " primitive for "
                                                                                 << pr.to_string() << ": "
                                                                                 << e.what());
    }
  }

  // in0, in1 -> out (+ bias read or written), reordering at the edges. The
  // forward and backward data passes keep their reordered in0 (x, dy); the
  // backward filter pass takes both of its inputs from there when they are
  // the same contents, and lets them go afterwards.
  void run(const ConvProblem& pr, const Plan& p, Pass pass, const float* in0, const float* in1, float* out,
           const float* bias, void* ws) const {
    auto* base = static_cast<unsigned char*>(ws);
    base += (kAlign - reinterpret_cast<std::uintptr_t>(base) % kAlign) % kAlign;
    const InputStates states = current_input_states();
    std::vector<std::shared_ptr<KeptInputs::Entry>> taken;
    auto operand = [&](const Operand& o, const float* user, bool input, std::uint64_t stamp, bool keep) {
      dnnl::memory plain = onednn::wrap(o.plain, user);
      if (!o.reorder) return plain;
      if (input && stamp != 0) {
        if (auto e = kept_.find(stamp, user, o.prim)) {
          if (pass == Pass::BackwardFilter) taken.push_back(e);
          return onednn::wrap(o.prim, e->mem);
        }
        if (keep) {
          if (auto e = kept_.add(stamp, user, o.prim)) {
            dnnl::memory prim = onednn::wrap(o.prim, e->mem);
            onednn::execute(*o.reorder, {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, prim}});
            return prim;
          }
        }
      }
      dnnl::memory prim = onednn::wrap(o.prim, base + o.offset);
      if (input) onednn::execute(*o.reorder, {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, prim}});
      return prim;
    };
    // Only a call inside an InputStatesScope (conv.cpp's) can keep anything;
    // the chooser's timing runs are outside one and must not ask the chooser,
    // which holds its lock while it times.
    const bool keep_in0 = pass != Pass::BackwardFilter && states.in0 != 0 && filter_pass_may_be_ours(pr);
    std::unordered_map<int, dnnl::memory> args;
    args.emplace(p.in0.arg, operand(p.in0, in0, true, states.in0, keep_in0));
    args.emplace(p.in1.arg, operand(p.in1, in1, true, pass == Pass::BackwardFilter ? states.in1 : 0, false));
    const dnnl::memory out_mem = operand(p.out, out, false, 0, false);
    args.emplace(p.out.arg, out_mem);
    if (!p.bias.is_zero()) {
      const bool fwd = p.out.arg == DNNL_ARG_DST;
      args.emplace(fwd ? DNNL_ARG_BIAS : DNNL_ARG_DIFF_BIAS, onednn::wrap(p.bias, bias));
    }
    if (p.scratch.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, onednn::wrap(p.scratch, base + p.scratch_offset));
    try {
      onednn::execute(p.prim, args);
      if (p.out.reorder) {
        onednn::execute(*p.out.reorder, {{DNNL_ARG_FROM, out_mem}, {DNNL_ARG_TO, onednn::wrap(p.out.plain, out)}});
      }
    } catch (const dnnl::error& e) {
      MAGMADNN_THROW(DeviceError, "conv2d onednn: executing a primitive failed: " << e.what());
    }
    for (const auto& e : taken) kept_.drop(e);
  }

  // Kept inputs are read only by this problem's backward filter pass, so
  // they are kept unless the chooser gave that pass to another algorithm.
  // Before its first choice (a network's first step) and under a forced
  // algorithm (not cached) nothing is known, and they are kept.
  static bool filter_pass_may_be_ours(const ConvProblem& pr) {
    const std::optional<Choice> c = cached_choice<float>(pr, Pass::BackwardFilter, DeviceKind::CPU);
    return !c || c->algo == Algo::OneDNN;
  }

 public:
  std::size_t kept_bytes() const { return kept_.bytes(); }

 private:
  mutable KeptInputs kept_;
  mutable std::mutex mu_;
  mutable std::map<std::tuple<std::string, int, bool, bool>, std::unique_ptr<Plan>> plans_;
};

struct Registrar {
  Registrar() { detail::register_algorithm<float>(std::make_unique<OnednnConv>()); }
} const registrar;

}  // namespace

std::size_t onednn_kept_input_bytes() {
  auto* a = find_algorithm<float>(Algo::OneDNN, DeviceKind::CPU);
  return a ? static_cast<const OnednnConv*>(a)->kept_bytes() : 0;
}

}  // namespace magmadnn::conv
