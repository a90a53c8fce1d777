// The oneDNN 2.x / 3.x seam (onednn_compat.h says what each function does).
// Each function is one #if: the 2.x form first, the 3.x form second.
#include "magmadnn/backend/cpu/onednn_compat.h"

namespace magmadnn::onednn_compat {

using dnnl::memory;

std::string runtime_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

void set_runtime_scale(dnnl::primitive_attr& attr) {
#if DNNL_VERSION_MAJOR < 3
  attr.set_output_scales(0, {DNNL_RUNTIME_F32_VAL});
#else
  attr.set_scales_mask(DNNL_ARG_SRC, 0);
#endif
}

int scale_arg() {
#if DNNL_VERSION_MAJOR < 3
  return DNNL_ARG_ATTR_OUTPUT_SCALES;
#else
  return DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC;
#endif
}

memory::desc scale_desc() { return memory::desc({1}, memory::data_type::f32, memory::format_tag::x); }

void append_eltwise(dnnl::post_ops& po, dnnl::algorithm alg, float alpha, float beta) {
#if DNNL_VERSION_MAJOR < 3
  po.append_eltwise(1.f, alg, alpha, beta);
#else
  po.append_eltwise(alg, alpha, beta);
#endif
}

void append_sum(dnnl::post_ops& po, float scale) { po.append_sum(scale); }

dnnl::matmul::primitive_desc matmul_pd(const dnnl::engine& eng, const memory::desc& src, const memory::desc& weights,
                                       const memory::desc* bias, const memory::desc& dst,
                                       const dnnl::primitive_attr& attr) {
#if DNNL_VERSION_MAJOR < 3
  const auto d = bias ? dnnl::matmul::desc(src, weights, *bias, dst) : dnnl::matmul::desc(src, weights, dst);
  return dnnl::matmul::primitive_desc(d, attr, eng);
#else
  return bias ? dnnl::matmul::primitive_desc(eng, src, weights, *bias, dst, attr)
              : dnnl::matmul::primitive_desc(eng, src, weights, dst, attr);
#endif
}

dnnl::convolution_forward::primitive_desc conv_forward_pd(const dnnl::engine& eng, dnnl::prop_kind prop,
                                                          dnnl::algorithm alg, const memory::desc& src,
                                                          const memory::desc& weights, const memory::desc* bias,
                                                          const memory::desc& dst, const ConvShape& g,
                                                          const dnnl::primitive_attr& attr) {
  using pd_t = dnnl::convolution_forward::primitive_desc;
#if DNNL_VERSION_MAJOR < 3
  using desc_t = dnnl::convolution_forward::desc;
  const desc_t d = bias ? desc_t(prop, alg, src, weights, *bias, dst, g.strides, g.dilation, g.pad_l, g.pad_r)
                        : desc_t(prop, alg, src, weights, dst, g.strides, g.dilation, g.pad_l, g.pad_r);
  return pd_t(d, attr, eng);
#else
  return bias ? pd_t(eng, prop, alg, src, weights, *bias, dst, g.strides, g.dilation, g.pad_l, g.pad_r, attr)
              : pd_t(eng, prop, alg, src, weights, dst, g.strides, g.dilation, g.pad_l, g.pad_r, attr);
#endif
}

dnnl::convolution_backward_data::primitive_desc conv_backward_data_pd(
    const dnnl::engine& eng, dnnl::algorithm alg, const memory::desc& diff_src, const memory::desc& weights,
    const memory::desc& diff_dst, const ConvShape& g, const dnnl::convolution_forward::primitive_desc& hint,
    const dnnl::primitive_attr& attr) {
  using pd_t = dnnl::convolution_backward_data::primitive_desc;
#if DNNL_VERSION_MAJOR < 3
  const dnnl::convolution_backward_data::desc d(alg, diff_src, weights, diff_dst, g.strides, g.dilation, g.pad_l,
                                                g.pad_r);
  return pd_t(d, attr, eng, hint);
#else
  return pd_t(eng, alg, diff_src, weights, diff_dst, g.strides, g.dilation, g.pad_l, g.pad_r, hint, attr);
#endif
}

dnnl::convolution_backward_weights::primitive_desc conv_backward_weights_pd(
    const dnnl::engine& eng, dnnl::algorithm alg, const memory::desc& src, const memory::desc& diff_weights,
    const memory::desc* diff_bias, const memory::desc& diff_dst, const ConvShape& g,
    const dnnl::convolution_forward::primitive_desc& hint, const dnnl::primitive_attr& attr) {
  using pd_t = dnnl::convolution_backward_weights::primitive_desc;
#if DNNL_VERSION_MAJOR < 3
  using desc_t = dnnl::convolution_backward_weights::desc;
  const desc_t d = diff_bias ? desc_t(alg, src, diff_weights, *diff_bias, diff_dst, g.strides, g.dilation, g.pad_l,
                                      g.pad_r)
                             : desc_t(alg, src, diff_weights, diff_dst, g.strides, g.dilation, g.pad_l, g.pad_r);
  return pd_t(d, attr, eng, hint);
#else
  return diff_bias ? pd_t(eng, alg, src, diff_weights, *diff_bias, diff_dst, g.strides, g.dilation, g.pad_l,
                          g.pad_r, hint, attr)
                   : pd_t(eng, alg, src, diff_weights, diff_dst, g.strides, g.dilation, g.pad_l, g.pad_r, hint,
                          attr);
#endif
}

dnnl::pooling_forward::primitive_desc pooling_forward_pd(const dnnl::engine& eng, dnnl::prop_kind prop,
                                                         dnnl::algorithm alg, const memory::desc& src,
                                                         const memory::desc& dst, const PoolShape& g) {
#if DNNL_VERSION_MAJOR < 3
  const dnnl::pooling_forward::desc d(prop, alg, src, dst, g.strides, g.kernel, g.pad_l, g.pad_r);
  return dnnl::pooling_forward::primitive_desc(d, eng);
#else
  const memory::dims no_dilation(g.kernel.size(), 0);
  return dnnl::pooling_forward::primitive_desc(eng, prop, alg, src, dst, g.strides, g.kernel, no_dilation, g.pad_l,
                                               g.pad_r);
#endif
}

dnnl::pooling_backward::primitive_desc pooling_backward_pd(const dnnl::engine& eng, dnnl::algorithm alg,
                                                           const memory::desc& diff_src, const memory::desc& diff_dst,
                                                           const PoolShape& g,
                                                           const dnnl::pooling_forward::primitive_desc& hint) {
#if DNNL_VERSION_MAJOR < 3
  const dnnl::pooling_backward::desc d(alg, diff_src, diff_dst, g.strides, g.kernel, g.pad_l, g.pad_r);
  return dnnl::pooling_backward::primitive_desc(d, eng, hint);
#else
  const memory::dims no_dilation(g.kernel.size(), 0);
  return dnnl::pooling_backward::primitive_desc(eng, alg, diff_src, diff_dst, g.strides, g.kernel, no_dilation,
                                                g.pad_l, g.pad_r, hint);
#endif
}

memory::data_type data_type(const memory::desc& md) {
#if DNNL_VERSION_MAJOR < 3
  return md.data_type();
#else
  return md.get_data_type();
#endif
}

int effective_isa_vector_bits() {
  // The 512-bit ISAs have the larger enumerators in both APIs' cpu_isa; the
  // comparison is on the C values, which name the same ISAs in both.
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  if ((isa & static_cast<unsigned>(dnnl_cpu_isa_avx512_core)) == static_cast<unsigned>(dnnl_cpu_isa_avx512_core))
    return 512;
  if ((isa & static_cast<unsigned>(dnnl_cpu_isa_avx2)) == static_cast<unsigned>(dnnl_cpu_isa_avx2)) return 256;
  return 0;
}

}  // namespace magmadnn::onednn_compat
