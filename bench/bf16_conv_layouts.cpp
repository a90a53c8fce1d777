// ResNet-50's 23 distinct convolutions in bf16 (bf16 operands, float
// results, as magmadnn's bf16 convolutions compute), in the two activation
// layouts conv/conv_bf16.cpp can hand oneDNN: NCHW with OIHW weights (what
// bf16 runs used before channels last: oneDNN runs its gemm convolution on
// it) and NHWC with the weights in the layout oneDNN asks for (its brgconv
// kernels on AMX or AVX-512 BF16). For a 1x1 convolution of stride 1, a
// third column: the pass in NHWC as one oneDNN matmul of the activations
// as matrices {N·H·W, C} (y = x·wᵀ, dx = dy·w, dw = dyᵀ·x), which
// conv_bf16.cpp takes for the backward passes. Only the primitive is
// timed, its operands already in its layouts; rounds alternate between the
// contenders and each figure is the fastest of the rounds.
//
// Usage: bench_bf16_conv_layouts [--batch B] [--rounds R]   (threads: OMP_NUM_THREADS)
// Prints per (layer, pass) the times and kernels, then the per-step totals
// weighted by how often each convolution occurs in the network (the
// matmul's: over the layers it applies to, beside the convolution's there).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "resnet50_conv_floor.h"

namespace {

using namespace r50;
using dt = memory::data_type;

dnnl::memory zeros(const memory::desc& md) {
  dnnl::memory m(md, engine());
  std::memset(m.get_data_handle(), 0x3c, md.get_size());  // 0x3c3c: about 0.011 in bf16
  return m;
}

// The primitive of `pass` for layer l with activations in `act` (nchw: weights oihw, else any).
Prim make_bf16(const Layer& l, std::int64_t batch, Pass pass, tag act) {
  namespace oc = magmadnn::onednn_compat;
  const std::int64_t o = l.out();
  const memory::dims xd{batch, l.c, l.h, l.h}, yd{batch, l.k, o, o}, wd{l.k, l.c, l.r, l.r};
  const tag wt = act == tag::nchw ? tag::oihw : tag::any;
  const bool fwd = pass == Pass::Forward, data = pass == Pass::BackwardData;
  const memory::desc x(xd, fwd || !data ? dt::bf16 : dt::f32, act), y(yd, fwd ? dt::f32 : dt::bf16, act);
  const memory::desc w(wd, pass == Pass::BackwardFilter ? dt::f32 : dt::bf16, wt);
  const memory::desc hx(xd, dt::bf16, act), hy(yd, dt::f32, act), hw(wd, dt::bf16, wt);
  const std::int64_t pad_r = (o - 1) * l.stride + l.r - l.h - l.pad;
  const oc::ConvShape g{{l.stride, l.stride}, {0, 0}, {l.pad, l.pad}, {pad_r, pad_r}};
  const auto alg = dnnl::algorithm::convolution_direct;
  const auto hint = oc::conv_forward_pd(engine(), dnnl::prop_kind::forward_training, alg, hx, hw, nullptr, hy, g);
  Prim p;
  if (fwd) {
    const auto pd = oc::conv_forward_pd(engine(), dnnl::prop_kind::forward_training, alg, x, w, nullptr, y, g);
    p.prim = dnnl::convolution_forward(pd), p.impl = pd.impl_info_str();
    p.args = {{DNNL_ARG_SRC, zeros(pd.src_desc())}, {DNNL_ARG_WEIGHTS, zeros(pd.weights_desc())},
              {DNNL_ARG_DST, zeros(pd.dst_desc())}, {DNNL_ARG_SCRATCHPAD, zeros(pd.scratchpad_desc())}};
  } else if (data) {
    const auto pd = oc::conv_backward_data_pd(engine(), alg, x, w, y, g, hint);
    p.prim = dnnl::convolution_backward_data(pd), p.impl = pd.impl_info_str();
    p.args = {{DNNL_ARG_DIFF_DST, zeros(pd.diff_dst_desc())}, {DNNL_ARG_WEIGHTS, zeros(pd.weights_desc())},
              {DNNL_ARG_DIFF_SRC, zeros(pd.diff_src_desc())}, {DNNL_ARG_SCRATCHPAD, zeros(pd.scratchpad_desc())}};
  } else {
    const auto pd = oc::conv_backward_weights_pd(engine(), alg, x, w, nullptr, y, g, hint);
    p.prim = dnnl::convolution_backward_weights(pd), p.impl = pd.impl_info_str();
    p.args = {{DNNL_ARG_SRC, zeros(pd.src_desc())}, {DNNL_ARG_DIFF_DST, zeros(pd.diff_dst_desc())},
              {DNNL_ARG_DIFF_WEIGHTS, zeros(pd.diff_weights_desc())},
              {DNNL_ARG_SCRATCHPAD, zeros(pd.scratchpad_desc())}};
  }
  return p;
}

// The pass of a 1x1, stride-1 layer as a matmul (see the file comment).
Prim make_matmul(const Layer& l, std::int64_t batch, Pass pass) {
  const std::int64_t m = batch * l.h * l.h;
  memory::desc a, b, c;
  if (pass == Pass::Forward) {
    a = {{m, l.c}, dt::bf16, tag::ab}, b = {{l.c, l.k}, dt::bf16, tag::ba}, c = {{m, l.k}, dt::f32, tag::ab};
  } else if (pass == Pass::BackwardData) {
    a = {{m, l.k}, dt::bf16, tag::ab}, b = {{l.k, l.c}, dt::bf16, tag::ab}, c = {{m, l.c}, dt::f32, tag::ab};
  } else {
    a = {{l.k, m}, dt::bf16, tag::ba}, b = {{m, l.c}, dt::bf16, tag::ab}, c = {{l.k, l.c}, dt::f32, tag::ab};
  }
  const auto pd = magmadnn::onednn_compat::matmul_pd(engine(), a, b, nullptr, c);
  Prim p;
  p.prim = dnnl::matmul(pd), p.impl = pd.impl_info_str();
  p.args = {{DNNL_ARG_SRC, zeros(a)}, {DNNL_ARG_WEIGHTS, zeros(b)}, {DNNL_ARG_DST, zeros(c)},
            {DNNL_ARG_SCRATCHPAD, zeros(pd.scratchpad_desc())}};
  return p;
}

bool matmul_applies(const Layer& l) { return l.r == 1 && l.stride == 1 && l.pad == 0; }

}  // namespace

int main(int argc, char** argv) {
  std::int64_t batch = 32;
  int rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--batch")) batch = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
  }
  dnnl::stream s(engine());
  // [nchw, nhwc, matmul, nhwc where the matmul applies][pass]
  double total[4][3] = {};
  std::printf("%-24s %-16s %9s %9s %9s  kernels (nchw | nhwc | matmul)\n", "layer", "pass", "nchw ms", "nhwc ms",
              "matmul ms");
  for (const Layer& l : layers()) {
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) {
      if (l.first && pass == Pass::BackwardData) continue;
      std::vector<Prim> p = {make_bf16(l, batch, pass, tag::nchw), make_bf16(l, batch, pass, tag::nhwc)};
      if (matmul_applies(l)) p.push_back(make_matmul(l, batch, pass));
      std::vector<double> best(p.size(), 1e30);
      for (int r = 0; r <= rounds; ++r) {  // round 0 warms up
        for (std::size_t v = 0; v < p.size(); ++v) {
          const double t0 = now();
          p[v].run(s);
          if (r > 0) best[v] = std::min(best[v], now() - t0);
        }
      }
      const int k = static_cast<int>(pass);
      total[0][k] += best[0] * l.count, total[1][k] += best[1] * l.count;
      if (p.size() == 3) total[2][k] += best[2] * l.count, total[3][k] += best[1] * l.count;
      std::printf("%-24s %-16s %9.2f %9.2f %9s  %s | %s | %s\n", l.name, pass_name(pass), best[0] * 1e3,
                  best[1] * 1e3, p.size() == 3 ? std::to_string(best[2] * 1e3).substr(0, 6).c_str() : "-",
                  p[0].impl.c_str(), p[1].impl.c_str(), p.size() == 3 ? p[2].impl.c_str() : "-");
    }
  }
  const char* names[4] = {"nchw", "nhwc", "1x1 layers as matmul", "1x1 layers in nhwc"};
  for (int v = 0; v < 4; ++v) {
    std::printf("per step, %s: forward %.0f ms, backward data %.0f ms, backward filter %.0f ms, all %.0f ms\n",
                names[v], total[v][0] * 1e3, total[v][1] * 1e3, total[v][2] * 1e3,
                (total[v][0] + total[v][1] + total[v][2]) * 1e3);
  }
}
