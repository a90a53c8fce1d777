/// @file index_plan.h
/// Host-side index planning shared by the CPU and CUDA backends: how an
/// operand of a broadcast op is laid out relative to the output, and the
/// simplified form of an axis permutation. Both backends choose their fast
/// paths from these, so they agree on what "dense", "scalar" and "row" mean.
#pragma once

#include <cstdint>

#include "magmadnn/backend/kernels.h"

namespace magmadnn::index_plan {

/// The operand with these strides walks the output densely (row-major,
/// size-1 axes ignored).
inline bool is_dense(const std::int64_t* strides, const BroadcastDesc& d) {
  std::int64_t expect = 1;
  for (int i = d.ndim - 1; i >= 0; --i) {
    if (d.shape[i] != 1 && strides[i] != expect) return false;
    expect *= d.shape[i];
  }
  return true;
}

/// The operand is one value broadcast everywhere.
inline bool is_scalar(const std::int64_t* strides, const BroadcastDesc& d) {
  for (int i = 0; i < d.ndim; ++i)
    if (d.shape[i] != 1 && strides[i] != 0) return false;
  return true;
}

/// The operand is a vector along the last axis repeated over all others (a bias).
inline bool is_row(const std::int64_t* strides, const BroadcastDesc& d) {
  if (d.ndim < 1 || strides[d.ndim - 1] != 1) return false;
  for (int i = 0; i < d.ndim - 1; ++i)
    if (d.shape[i] != 1 && strides[i] != 0) return false;
  return true;
}

/// A permutation as the output's axes (`size`) with, per output axis, its
/// stride in x (`xs`). Trivially copyable, so a kernel can take it by value.
struct PermutePlan {
  int nd = 0;
  std::int64_t size[BroadcastDesc::kMaxDims] = {};
  std::int64_t xs[BroadcastDesc::kMaxDims] = {};
};

/// Drops size-1 axes and merges output axes that are adjacent and in order in
/// x, so the index arithmetic runs over as few axes as possible (NCHW -> NHWC
/// becomes a batched 2-D transpose: 3 axes, not 4).
inline PermutePlan simplify_permute(int ndim, const std::int64_t* shape, const int* perm) {
  std::int64_t xstride[BroadcastDesc::kMaxDims];
  std::int64_t s = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    xstride[i] = s;
    s *= shape[i];
  }
  PermutePlan p;
  for (int i = 0; i < ndim; ++i) {
    const std::int64_t d = shape[perm[i]], st = xstride[perm[i]];
    if (d == 1) continue;
    if (p.nd > 0 && p.xs[p.nd - 1] == st * d) {
      p.size[p.nd - 1] *= d;
      p.xs[p.nd - 1] = st;
    } else {
      p.size[p.nd] = d;
      p.xs[p.nd] = st;
      ++p.nd;
    }
  }
  return p;
}

}  // namespace magmadnn::index_plan
