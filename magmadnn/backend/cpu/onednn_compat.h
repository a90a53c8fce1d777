/// @file onednn_compat.h
/// The one place that knows which oneDNN API this build compiles against.
///
/// Purpose: Debian 12 ships oneDNN 2.6 and Debian 13 oneDNN 3.7, and the two
/// APIs differ in how primitive descriptors are made (2.x: an operation
/// descriptor `X::desc` first, then `X::primitive_desc(desc, attr, engine)`;
/// 3.x: `X::primitive_desc(engine, ..., attr)` directly), in how a run-time
/// scale is declared and passed (2.x: output scales; 3.x: per-argument
/// scales), in the eltwise post-op (2.x takes a scale first, 3.x none) and in
/// some accessors. Every other file builds its primitives through the
/// functions below and uses only the types and enumerators both APIs share
/// (engine, stream, memory, memory::desc, primitive_attr, post_ops,
/// algorithm, prop_kind, the primitives themselves, reorder).
///
/// Requirements: oneDNN 2.6 or later (checked at compile time). No function
/// here depends on the rest of magmadnn, so bench/ programs that link oneDNN
/// alone compile onednn_compat.cpp into themselves.
///
/// Guarantees: each function does on either API what its comment says.
/// Primitive-descriptor functions throw dnnl::error, as oneDNN does, when
/// oneDNN has no implementation for the problem (callers catch it to probe,
/// e.g. for native bf16).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#if DNNL_VERSION_MAJOR < 2 || (DNNL_VERSION_MAJOR == 2 && DNNL_VERSION_MINOR < 6)
#error "magmadnn needs oneDNN 2.6 or later"
#endif

namespace magmadnn::onednn_compat {

/// The oneDNN API major version this build compiled against (2 or 3).
inline constexpr int kApiMajor = DNNL_VERSION_MAJOR;

/// The version of the oneDNN library loaded at run time, e.g. "3.7.2".
std::string runtime_version();

// -- Attributes ------------------------------------------------------------

/// Declares one float scale, supplied at execution under scale_arg(), that
/// multiplies the product: dst = scale * (src x weights), then the post-ops.
/// Not to be combined with a bias: oneDNN 2.x scales the bias too (output
/// scale), 3.x does not (source scale).
void set_runtime_scale(dnnl::primitive_attr& attr);

/// The execute() argument key of the scale set by set_runtime_scale: a
/// memory of scale_desc() holding one float.
int scale_arg();

/// The descriptor of that scale's memory: one f32.
dnnl::memory::desc scale_desc();

/// Appends dst = act(dst) with `alg` and its parameters alpha, beta
/// (eltwise_relu's alpha is the negative slope).
void append_eltwise(dnnl::post_ops& po, dnnl::algorithm alg, float alpha, float beta);

/// Appends dst = dst + scale * (the destination's previous contents).
void append_sum(dnnl::post_ops& po, float scale);

// -- Primitive descriptors -----------------------------------------------

/// dst = src x weights (+ bias, when `bias` is not null), 2-D or batched 3-D.
dnnl::matmul::primitive_desc matmul_pd(const dnnl::engine& eng, const dnnl::memory::desc& src,
                                       const dnnl::memory::desc& weights, const dnnl::memory::desc* bias,
                                       const dnnl::memory::desc& dst,
                                       const dnnl::primitive_attr& attr = dnnl::primitive_attr());

/// Convolution geometry as oneDNN wants it: dilation counted from 0.
struct ConvShape {
  dnnl::memory::dims strides, dilation, pad_l, pad_r;
};

/// Forward convolution (+ bias when `bias` is not null).
dnnl::convolution_forward::primitive_desc conv_forward_pd(const dnnl::engine& eng, dnnl::prop_kind prop,
                                                          dnnl::algorithm alg, const dnnl::memory::desc& src,
                                                          const dnnl::memory::desc& weights,
                                                          const dnnl::memory::desc* bias,
                                                          const dnnl::memory::desc& dst, const ConvShape& shape,
                                                          const dnnl::primitive_attr& attr = dnnl::primitive_attr());

/// Backward-data convolution; `hint` is the forward one it belongs to.
dnnl::convolution_backward_data::primitive_desc conv_backward_data_pd(
    const dnnl::engine& eng, dnnl::algorithm alg, const dnnl::memory::desc& diff_src,
    const dnnl::memory::desc& weights, const dnnl::memory::desc& diff_dst, const ConvShape& shape,
    const dnnl::convolution_forward::primitive_desc& hint, const dnnl::primitive_attr& attr = dnnl::primitive_attr());

/// Backward-weights convolution (+ the bias gradient when `diff_bias` is not
/// null); `hint` is the forward one it belongs to.
dnnl::convolution_backward_weights::primitive_desc conv_backward_weights_pd(
    const dnnl::engine& eng, dnnl::algorithm alg, const dnnl::memory::desc& src,
    const dnnl::memory::desc& diff_weights, const dnnl::memory::desc* diff_bias, const dnnl::memory::desc& diff_dst,
    const ConvShape& shape, const dnnl::convolution_forward::primitive_desc& hint,
    const dnnl::primitive_attr& attr = dnnl::primitive_attr());

/// Pooling geometry: strides, kernel, paddings (no dilation).
struct PoolShape {
  dnnl::memory::dims strides, kernel, pad_l, pad_r;
};

/// Forward pooling.
dnnl::pooling_forward::primitive_desc pooling_forward_pd(const dnnl::engine& eng, dnnl::prop_kind prop,
                                                         dnnl::algorithm alg, const dnnl::memory::desc& src,
                                                         const dnnl::memory::desc& dst, const PoolShape& shape);

/// Backward pooling; `hint` is the forward (training) one it belongs to.
dnnl::pooling_backward::primitive_desc pooling_backward_pd(const dnnl::engine& eng, dnnl::algorithm alg,
                                                           const dnnl::memory::desc& diff_src,
                                                           const dnnl::memory::desc& diff_dst, const PoolShape& shape,
                                                           const dnnl::pooling_forward::primitive_desc& hint);

// -- Accessors ------------------------------------------------------------

/// The element type of `md`.
dnnl::memory::data_type data_type(const dnnl::memory::desc& md);

/// The vector width in bits of the instruction set oneDNN dispatches to on
/// this CPU: 512 (AVX-512 and newer), 256 (AVX2), 0 (anything else).
int effective_isa_vector_bits();

}  // namespace magmadnn::onednn_compat
