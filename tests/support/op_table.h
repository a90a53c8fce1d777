/// @file op_table.h
/// What tests that loop over the op table (backend/unary_op_table.h) feed
/// each op, read from its row, so that a new row is tested with no new test
/// code: inputs inside its domain, and a parameter where it takes one.
#pragma once

#include <ostream>
#include <random>
#include <vector>

#include "magmadnn/backend/unary_op_table.h"

namespace magmadnn {
/// Parameterized tests over UnaryOp values print the op's name.
inline void PrintTo(UnaryOp op, std::ostream* os) { *os << op_name(op); }
}  // namespace magmadnn

namespace magmadnn::testing {

/// p for an op that takes one, 0 for the others: 0.7 fits every parameter
/// of the table (exponent, factor, addend, slope) without being 0 or 1,
/// where a wrong use of it would go unseen.
inline double op_param(const UnaryOpInfo& r) { return r.param ? 0.7 : 0.0; }

/// Maps u in [0, 1) to an input of `d` whose magnitude lies in [lo, hi]
/// (0 < lo < hi): either sign for Real and NonZero, positive for Positive.
/// lo > 0 keeps inputs off the kinks at 0 (relu, abs, leaky_relu), where
/// derivatives and finite differences disagree.
inline double op_input(Domain d, double u, double lo, double hi) {
  if (d == Domain::Positive) return lo + (hi - lo) * u;
  const double t = u < 0.5 ? 2 * u : 2 * u - 1;
  const double m = lo + (hi - lo) * t;
  return u < 0.5 ? -m : m;
}

/// n inputs of `r` drawn with `rng` (a standard random bit generator), with
/// magnitudes in [1e-3, hi] where the domain is Real and [0.3, hi] otherwise
/// (away from the poles of log, sqrt and reciprocal).
template <typename T, typename Rng>
std::vector<T> op_inputs(const UnaryOpInfo& r, Rng& rng, std::size_t n, double hi = 4.0) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double lo = r.domain == Domain::Real ? 1e-3 : 0.3;
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(op_input(r.domain, u(rng), lo, hi));
  return v;
}

/// The ops of the table's rows for which `keep` holds (all without one), in
/// table order: values for parameterized tests.
inline std::vector<UnaryOp> table_ops(bool (*keep)(const UnaryOpInfo&) = nullptr) {
  std::vector<UnaryOp> ops;
  for (const UnaryOpInfo& r : kUnaryOpTable) {
    if (keep == nullptr || keep(r)) ops.push_back(r.op);
  }
  return ops;
}

}  // namespace magmadnn::testing
