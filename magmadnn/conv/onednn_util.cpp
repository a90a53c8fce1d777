#include "magmadnn/conv/onednn_util.h"

#include "magmadnn/core/errors.h"
#include "magmadnn/conv/layout.h"

namespace magmadnn::conv::onednn {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

void execute(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args) {
  thread_local dnnl::stream stream(engine());
  prim.execute(stream, args);
  stream.wait();
}

dnnl::memory wrap(const dnnl::memory::desc& md, const void* p) {
  // oneDNN takes a non-const handle for inputs too; it does not write them.
  return dnnl::memory(md, engine(), const_cast<void*>(p));
}

Geometry geometry(const ConvProblem& pr) {
  const ConvParams& g = pr.geom;
  return {
      {g.stride_h, g.stride_w},
      {g.dilation_h - 1, g.dilation_w - 1},
      {g.pad_h, g.pad_w},
      {(pr.p - 1) * g.stride_h + (pr.r - 1) * g.dilation_h + 1 - pr.h - g.pad_h,
       (pr.q - 1) * g.stride_w + (pr.s - 1) * g.dilation_w + 1 - pr.w - g.pad_w},
  };
}

dnnl::memory::dims weight_dims(const ConvProblem& pr) {
  const std::int64_t g = pr.geom.groups;
  return g == 1 ? dnnl::memory::dims{pr.k, pr.c, pr.r, pr.s}
                : dnnl::memory::dims{g, pr.k / g, pr.c / g, pr.r, pr.s};
}

dnnl::memory::format_tag weight_tag(const ConvProblem& pr) {
  return pr.geom.groups == 1 ? dnnl::memory::format_tag::oihw : dnnl::memory::format_tag::goihw;
}

dnnl::memory::format_tag activation_tag(int block) {
  switch (block) {
    case 0: return dnnl::memory::format_tag::nchw;
    case 8: return dnnl::memory::format_tag::nChw8c;
    case 16: return dnnl::memory::format_tag::nChw16c;
    case kChannelsLast: return dnnl::memory::format_tag::nhwc;
    default: MAGMADNN_THROW(ValueError, "conv: no activation layout with channel block " << block);
  }
}

}  // namespace magmadnn::conv::onednn
