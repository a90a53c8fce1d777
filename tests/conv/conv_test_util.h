// Shared helpers of the convolution tests: random buffers and a reference
// run of all three passes through one algorithm.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "magmadnn/backend/registry.h"
#include "magmadnn/conv/algorithm.h"

namespace convtest {

using namespace magmadnn;
using namespace magmadnn::conv;

template <typename T>
std::vector<T> random_vec(std::int64_t n, std::uint64_t seed) {
  std::vector<T> v(static_cast<std::size_t>(n));
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<T>(double(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
  return v;
}

/// Outputs of the three passes for fixed inputs.
template <typename T>
struct Passes {
  std::vector<T> y, dx, dw, db;
};

template <typename T>
Passes<T> run_all(ConvAlgorithm<T>& a, const ConvProblem& pr, std::uint64_t seed) {
  const auto x = random_vec<T>(pr.x_shape().numel(), seed);
  const auto w = random_vec<T>(pr.w_shape().numel(), seed + 1);
  const auto b = random_vec<T>(pr.k, seed + 2);
  const auto dy = random_vec<T>(pr.y_shape().numel(), seed + 3);
  Passes<T> out;
  out.y.assign(pr.y_shape().numel(), T(7));  // garbage: outputs must be overwritten
  out.dx.assign(pr.x_shape().numel(), T(7));
  out.dw.assign(pr.w_shape().numel(), T(7));
  out.db.assign(pr.k, T(7));
  auto ws_for = [&](Pass p) { return std::vector<unsigned char>(a.workspace_bytes(pr, p) + 64); };
  auto aligned = [](std::vector<unsigned char>& v) {
    auto addr = reinterpret_cast<std::uintptr_t>(v.data());
    return static_cast<void*>(v.data() + ((64 - addr % 64) % 64));
  };
  if (a.supports(pr, Pass::Forward)) {
    auto ws = ws_for(Pass::Forward);
    a.forward(pr, x.data(), w.data(), b.data(), out.y.data(), aligned(ws));
  }
  if (a.supports(pr, Pass::BackwardData)) {
    auto ws = ws_for(Pass::BackwardData);
    a.backward_data(pr, dy.data(), w.data(), out.dx.data(), aligned(ws));
  }
  if (a.supports(pr, Pass::BackwardFilter)) {
    auto ws = ws_for(Pass::BackwardFilter);
    a.backward_filter(pr, x.data(), dy.data(), out.dw.data(), out.db.data(), aligned(ws));
  }
  return out;
}

/// max |a - b| / max(1, max |ref|).
template <typename T>
double rel_err(const std::vector<T>& a, const std::vector<T>& ref) {
  double diff = 0, mag = 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - double(ref[i])));
    mag = std::max(mag, std::abs(double(ref[i])));
  }
  return diff / mag;
}

}  // namespace convtest
