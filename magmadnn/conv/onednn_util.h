/// @file onednn_util.h
/// What the oneDNN convolution and pooling paths share (internal to
/// magmadnn/conv): one CPU engine for the process, a stream per thread, and
/// the translation of our convolution geometry into oneDNN's terms.
///
/// Requires a build with oneDNN (always the case on the CPU). The engine is
/// created on first use and lives until exit; execute() runs a primitive on
/// the calling thread's stream and waits for it, so results are ready when it
/// returns.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "magmadnn/backend/cpu/onednn_compat.h"
#include "magmadnn/conv/conv_params.h"

namespace magmadnn::conv::onednn {

/// The process's oneDNN CPU engine.
dnnl::engine& engine();

/// Runs `prim` with `args` on this thread's stream and waits for it.
void execute(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args);

/// A memory object over a caller's buffer (no copy; the buffer must outlive it).
dnnl::memory wrap(const dnnl::memory::desc& md, const void* p);

/// Strides, dilations and paddings of a problem as oneDNN wants them:
/// dilation counted from 0, and the right/bottom padding that makes oneDNN's
/// output size equal ours (it may be smaller than pad, even negative, when
/// the stride leaves input rows unused).
using Geometry = onednn_compat::ConvShape;  // strides, dilation, pad_l, pad_r
Geometry geometry(const ConvProblem& pr);

/// Weight dimensions: {K, C, R, S}, or {G, K/G, C/G, R, S} with groups.
dnnl::memory::dims weight_dims(const ConvProblem& pr);
/// The plain tag of those weights: oihw or goihw.
dnnl::memory::format_tag weight_tag(const ConvProblem& pr);
/// The tag of activations with channel block `block` (conv/layout.h):
/// nchw for 0, nChw8c, nChw16c, nhwc for kChannelsLast; ValueError for any other.
dnnl::memory::format_tag activation_tag(int block);

}  // namespace magmadnn::conv::onednn
