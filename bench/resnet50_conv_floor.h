// The distinct convolutions of ResNet-50 v1.5 and the fastest oneDNN
// primitive for each pass of each (the "floor" that no oneDNN-based
// framework beats), shared by bench_resnet50_convs (our path against the
// floor) and bench_onednn_conv_floor (the floor alone, built against any
// oneDNN 2.6+ or 3.x, so two versions can be compared). Depends on oneDNN
// and magmadnn/backend/cpu/onednn_compat.h only.
//
// The floor is the fastest of three descriptions of a problem: every
// operand format_tag::any (oneDNN picks the layouts), activations nChw8c
// with weights any, and activations nhwc (channels_last, PyTorch's fast CPU
// layout) with weights any; oneDNN's reference loops ("ref:...", its
// fallback where no kernel takes a layout) are left out. Operands are
// allocated in the primitive's own layouts and filled once; only the
// primitive's execution is timed.
#pragma once

#include <chrono>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "magmadnn/backend/cpu/onednn_compat.h"

namespace r50 {

using dnnl::memory;
using tag = memory::format_tag;

enum class Pass { Forward, BackwardData, BackwardFilter };
inline const char* pass_name(Pass p) {
  return p == Pass::Forward ? "forward" : p == Pass::BackwardData ? "backward_data" : "backward_filter";
}

// One distinct convolution of ResNet-50 and how many times a step runs it.
struct Layer {
  const char* name;
  std::int64_t c, h, k, r, stride, pad;
  int count;
  bool first;  // the stem: x is the NCHW image, and no dx is computed
  std::int64_t out() const { return (h + 2 * pad - r) / stride + 1; }
};

// torchvision's v1.5: 53 convolutions, 23 distinct problems.
inline const std::vector<Layer>& layers() {
  static const std::vector<Layer> l = {
      {"stem 7x7/2 3->64", 3, 224, 64, 7, 2, 3, 1, true},
      {"l1 1x1 64->64", 64, 56, 64, 1, 1, 0, 1, false},
      {"l1 1x1 256->64", 256, 56, 64, 1, 1, 0, 2, false},
      {"l1 3x3 64", 64, 56, 64, 3, 1, 1, 3, false},
      {"l1 1x1 64->256", 64, 56, 256, 1, 1, 0, 4, false},
      {"l2 1x1 256->128", 256, 56, 128, 1, 1, 0, 1, false},
      {"l2 3x3/2 128", 128, 56, 128, 3, 2, 1, 1, false},
      {"l2 1x1 128->512", 128, 28, 512, 1, 1, 0, 4, false},
      {"l2 ds 1x1/2 256->512", 256, 56, 512, 1, 2, 0, 1, false},
      {"l2 1x1 512->128", 512, 28, 128, 1, 1, 0, 3, false},
      {"l2 3x3 128", 128, 28, 128, 3, 1, 1, 3, false},
      {"l3 1x1 512->256", 512, 28, 256, 1, 1, 0, 1, false},
      {"l3 3x3/2 256", 256, 28, 256, 3, 2, 1, 1, false},
      {"l3 1x1 256->1024", 256, 14, 1024, 1, 1, 0, 6, false},
      {"l3 ds 1x1/2 512->1024", 512, 28, 1024, 1, 2, 0, 1, false},
      {"l3 1x1 1024->256", 1024, 14, 256, 1, 1, 0, 5, false},
      {"l3 3x3 256", 256, 14, 256, 3, 1, 1, 5, false},
      {"l4 1x1 1024->512", 1024, 14, 512, 1, 1, 0, 1, false},
      {"l4 3x3/2 512", 512, 14, 512, 3, 2, 1, 1, false},
      {"l4 1x1 512->2048", 512, 7, 2048, 1, 1, 0, 3, false},
      {"l4 ds 1x1/2 1024->2048", 1024, 14, 2048, 1, 2, 0, 1, false},
      {"l4 1x1 2048->512", 2048, 7, 512, 1, 1, 0, 2, false},
      {"l4 3x3 512", 512, 7, 512, 3, 1, 1, 2, false},
  };
  return l;
}

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// A ready-to-run oneDNN primitive with its operands allocated in its layouts.
struct Prim {
  dnnl::primitive prim;
  std::unordered_map<int, dnnl::memory> args;
  std::string impl;
  void run(dnnl::stream& s) {
    prim.execute(s, args);
    s.wait();
  }
};

inline dnnl::memory filled(const memory::desc& md, unsigned seed) {
  dnnl::memory m(md, engine());
  auto* p = static_cast<float*>(m.get_data_handle());
  std::uint32_t x = seed;
  for (std::size_t i = 0; i < md.get_size() / sizeof(float); ++i) {
    x = x * 1664525u + 1013904223u;
    p[i] = static_cast<float>(x >> 8) / static_cast<float>(1u << 24) - 0.5f;
  }
  return m;
}

inline std::string layout_name(tag t) { return t == tag::any ? "any" : t == tag::nhwc ? "nhwc" : "nChw8c"; }

// The primitive of `pass` for layer `l` at `batch` with activations described as `act`.
inline Prim make_prim(const Layer& l, std::int64_t batch, Pass pass, tag act) {
  using dt = memory::data_type;
  const std::int64_t o = l.out();
  const memory::dims xd{batch, l.c, l.h, l.h}, yd{batch, l.k, o, o}, wd{l.k, l.c, l.r, l.r};
  const memory::desc x(xd, dt::f32, act), y(yd, dt::f32, act), w(wd, dt::f32, tag::any);
  const std::int64_t pad_r = (o - 1) * l.stride + l.r - l.h - l.pad;
  const magmadnn::onednn_compat::ConvShape g{{l.stride, l.stride}, {0, 0}, {l.pad, l.pad}, {pad_r, pad_r}};
  const auto alg = dnnl::algorithm::convolution_direct;
  namespace oc = magmadnn::onednn_compat;
  const auto fwd = oc::conv_forward_pd(engine(), dnnl::prop_kind::forward_training, alg, x, w, nullptr, y, g);
  Prim p;
  switch (pass) {
    case Pass::Forward:
      p.prim = dnnl::convolution_forward(fwd);
      p.args = {{DNNL_ARG_SRC, filled(fwd.src_desc(), 1)},
                {DNNL_ARG_WEIGHTS, filled(fwd.weights_desc(), 2)},
                {DNNL_ARG_DST, dnnl::memory(fwd.dst_desc(), engine())},
                {DNNL_ARG_SCRATCHPAD, dnnl::memory(fwd.scratchpad_desc(), engine())}};
      p.impl = fwd.impl_info_str();
      break;
    case Pass::BackwardData: {
      const auto pd = oc::conv_backward_data_pd(engine(), alg, x, w, y, g, fwd);
      p.prim = dnnl::convolution_backward_data(pd);
      p.args = {{DNNL_ARG_DIFF_DST, filled(pd.diff_dst_desc(), 3)},
                {DNNL_ARG_WEIGHTS, filled(pd.weights_desc(), 2)},
                {DNNL_ARG_DIFF_SRC, dnnl::memory(pd.diff_src_desc(), engine())},
                {DNNL_ARG_SCRATCHPAD, dnnl::memory(pd.scratchpad_desc(), engine())}};
      p.impl = pd.impl_info_str();
      break;
    }
    case Pass::BackwardFilter: {
      const auto pd = oc::conv_backward_weights_pd(engine(), alg, x, w, nullptr, y, g, fwd);
      p.prim = dnnl::convolution_backward_weights(pd);
      p.args = {{DNNL_ARG_SRC, filled(pd.src_desc(), 1)},
                {DNNL_ARG_DIFF_DST, filled(pd.diff_dst_desc(), 3)},
                {DNNL_ARG_DIFF_WEIGHTS, dnnl::memory(pd.diff_weights_desc(), engine())},
                {DNNL_ARG_SCRATCHPAD, dnnl::memory(pd.scratchpad_desc(), engine())}};
      p.impl = pd.impl_info_str();
      break;
    }
  }
  p.impl += " " + layout_name(act);
  return p;
}

// Every non-reference description of the pass (see the file comment).
inline std::vector<Prim> floor_candidates(const Layer& l, std::int64_t batch, Pass pass) {
  std::vector<Prim> prims;
  for (tag t : {tag::any, tag::nChw8c, tag::nhwc}) {
    try {
      Prim p = make_prim(l, batch, pass, t);
      if (p.impl.rfind("ref", 0) != 0) prims.push_back(std::move(p));
    } catch (const dnnl::error&) {
    }
  }
  return prims;
}

}  // namespace r50
