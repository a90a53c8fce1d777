/// @file filler.h
/// How a new tensor is initialised: tensor_filler_t<T>{type, values}.
///
///   {NONE}                  contents left undefined (fastest)
///   {ZERO}, {ONE}           0 or 1 everywhere
///   {CONSTANT, v}           v everywhere
///   {IDENTITY}              1 on the main diagonal of a 2-D tensor, 0 elsewhere
///   {DIAGONAL, {d...}}      2-D: d on the diagonal (one value, or one per diagonal entry)
///   {UNIFORM, {lo, hi}}     U[lo, hi), default U[0, 1)
///   {GAUSSIAN, {mean, std}} N(mean, std^2), default N(0, 1)
///   {GLOROT, {gain}}        U[-a, a], a = gain * sqrt(6 / (fan_in + fan_out))
///   {GLOROT, {mean, std}}   MagmaDNN v1's two-value form: N(mean, std^2)
///   {HE, {gain}}            N(0, (gain^2) * 2 / fan_in)
///   {MASK, {p}}             1 with probability p, else 0
/// Fan-in and fan-out follow the weight layout {out, in, k...}: fan_in =
/// in * prod(k), fan_out = out * prod(k); a 1-D tensor uses its length for both.
/// Random fills draw from the global Philox seed (core/random.h), each fill
/// taking a new stream, so they repeat exactly for a given seed and produce the
/// same numbers on the CPU and on a GPU.
#pragma once

#include <type_traits>
#include <vector>

namespace magmadnn {

enum tensor_fill_t { UNIFORM, GLOROT, CONSTANT, ZERO, ONE, DIAGONAL, IDENTITY, MASK, NONE, GAUSSIAN, HE };

template <typename T>
struct tensor_filler_t {
  tensor_fill_t fill_type = NONE;
  std::vector<T> values;

  tensor_filler_t() = default;
  tensor_filler_t(tensor_fill_t type, std::vector<T> v = {})  // NOLINT: `NONE` and `{ZERO, {}}` convert
      : fill_type(type), values(std::move(v)) {}
  /// `{CONSTANT, -2.0f}`: a template so that `{CONSTANT, {3}}` and `{ONE, {}}`
  /// still pick the vector form.
  template <typename U, typename = std::enable_if_t<std::is_arithmetic_v<U>>>
  tensor_filler_t(tensor_fill_t type, U v) : fill_type(type), values{static_cast<T>(v)} {}
};

}  // namespace magmadnn
