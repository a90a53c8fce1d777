// Choosing a distributed GEMM algorithm from the layouts alone (gemm.h).
//
// Every rank runs this with the same arguments and so reaches the same
// plan: no metadata is exchanged. The conditions compare, rank by rank, the
// set of global indices a rank holds along each dimension; the costs count
// the elements one rank receives, a coarse but layout-aware stand-in for
// time that is enough to prefer no communication over some, and a small
// remap over a large one.
#include <algorithm>
#include <vector>

#include "magmadnn/core/errors.h"
#include "magmadnn/dmath/gemm.h"

namespace magmadnn::distributed::dmath {

const char* gemm_algorithm_name(GemmAlgorithm a) noexcept {
  switch (a) {
    case GemmAlgorithm::local: return "local";
    case GemmAlgorithm::reduce: return "reduce";
    case GemmAlgorithm::summa: return "summa";
  }
  return "?";
}

namespace {

// The global indices one rank holds along one dimension.
struct DimSet {
  enum Kind { none, all, part } kind = none;
  BlockCyclic1D map;
  int coord = -1;
  bool operator==(const DimSet& o) const {
    return kind == o.kind && (kind != part || (map == o.map && coord == o.coord));
  }
};

DimSet dim_set(const BlockCyclic1D& map, int coord) {
  if (coord < 0) return {};
  if (map.procs == 1) return {DimSet::all, map, 0};
  return {DimSet::part, map, coord};
}
DimSet row_set(const Layout& l, int rank) { return dim_set(l.row_map(), l.grid_row(rank)); }
DimSet col_set(const Layout& l, int rank) { return dim_set(l.col_map(), l.grid_col(rank)); }

// Every rank that holds part of C can form it from what it holds of op(A)
// (its rows of C, whole along k) and op(B) (its columns, whole along k); a
// replicated operand serves any rows or columns.
bool local_fits(const Layout& va, const Layout& vb, const Layout& c, int ranks) {
  for (int r = 0; r < ranks; ++r) {
    if (c.grid_row(r) < 0) continue;
    const bool a_ok = va.is_replicated() ? va.holds(r)
                                         : row_set(va, r) == row_set(c, r) && col_set(va, r).kind == DimSet::all;
    const bool b_ok = vb.is_replicated() ? vb.holds(r)
                                         : col_set(vb, r) == col_set(c, r) && row_set(vb, r).kind == DimSet::all;
    if (!a_ok || !b_ok) return false;
  }
  return true;
}

// op(A) whole along m and op(B) whole along n wherever they are held, both
// split along k in the same way on every rank, and each k index held by one
// rank only (neither replicated), so the partial products sum to the result.
bool reduce_fits(const Layout& va, const Layout& vb, int ranks) {
  if (va.is_replicated() || vb.is_replicated()) return false;
  for (int r = 0; r < ranks; ++r) {
    if (row_set(va, r).kind == DimSet::part || col_set(vb, r).kind == DimSet::part) return false;
    if (!(col_set(va, r) == row_set(vb, r))) return false;
  }
  return true;
}

// One grid for all three, op(A)'s rows dealt like C's, op(B)'s columns like
// C's; the k blocks of op(A) and op(B) may differ (panels are cut at both).
bool summa_fits(const Layout& va, const Layout& vb, const Layout& c) {
  if (c.is_replicated() || va.is_replicated() || vb.is_replicated()) return false;
  return va.grid() == c.grid() && vb.grid() == c.grid() && va.row_map() == c.row_map() &&
         vb.col_map() == c.col_map();
}

// Elements a rank receives to bring a matrix from `from` to `to`: nothing
// from a replicated source (each rank takes its part of its own copy), most
// of the matrix into a replicated target, about its share otherwise.
double remap_cost(const Layout& from, const Layout& to, int ranks) {
  if (from == to || from.is_replicated()) return 0;
  const double n = static_cast<double>(from.size());
  if (to.is_replicated()) return n * (ranks - 1) / ranks;
  return n / to.grid().size();
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// A block-cyclic target; blocks sized from an extent that may be 0 (an empty
// product) are made at least 1.
Layout target(std::int64_t rows, std::int64_t cols, const ProcessGrid& grid, std::int64_t mb, std::int64_t nb) {
  return Layout::block_cyclic(rows, cols, grid, std::max<std::int64_t>(mb, 1), std::max<std::int64_t>(nb, 1));
}

// Running `alg` after bringing op(A) from va to ta and op(B) from vb to tb.
GemmPlan candidate(GemmAlgorithm alg, const Layout& va, const Layout& vb, const Layout& ta, const Layout& tb,
                   double own_traffic, int ranks) {
  GemmPlan p;
  p.algorithm = alg;
  p.op_a = ta;
  p.op_b = tb;
  p.remap_a = !(ta == va);
  p.remap_b = !(tb == vb);
  p.received = remap_cost(va, ta, ranks) + remap_cost(vb, tb, ranks) + own_traffic;
  return p;
}

}  // namespace

GemmPlan plan_gemm(const Layout& a, bool trans_a, const Layout& b, bool trans_b, const Layout& c, int ranks,
                   std::optional<GemmAlgorithm> force) {
  const Layout va = trans_a ? a.transposed() : a;
  const Layout vb = trans_b ? b.transposed() : b;
  MAGMADNN_CHECK(va.cols() == vb.rows() && va.rows() == c.rows() && vb.cols() == c.cols(), ShapeError,
                 "gemm: op(A) is " << va.rows() << "x" << va.cols() << ", op(B) " << vb.rows() << "x" << vb.cols()
                                   << ", C " << c.rows() << "x" << c.cols() << "; they do not chain");
  const std::int64_t m = c.rows(), n = c.cols(), k = va.cols();
  const double mn = static_cast<double>(m) * static_cast<double>(n);
  const double g = ranks;

  // Reduction traffic: a reduce-scatter receives (P - 1)/P of C, an
  // allreduce twice that.
  const double reduce_traffic = (c.is_replicated() ? 2 : 1) * mn * (g - 1) / g;
  // Operands as they are first, so that on equal cost no remap happens.
  std::vector<GemmPlan> options;
  options.push_back(candidate(GemmAlgorithm::local, va, vb, va, vb, 0, ranks));
  options.push_back(candidate(GemmAlgorithm::reduce, va, vb, va, vb, reduce_traffic, ranks));
  const int pr = c.grid().rows(), pc = c.grid().cols();
  const double panels =
      static_cast<double>(m) / pr * k * (pc - 1) / pc + static_cast<double>(n) / pc * k * (pr - 1) / pr;
  options.push_back(candidate(GemmAlgorithm::summa, va, vb, va, vb, panels, ranks));

  // local: op(A) by C's rows (or replicated), op(B) by C's columns (or
  // replicated); an operand replicated already is kept where it suffices.
  {
    Layout ta = Layout::replicated(m, k), tb = Layout::replicated(k, n);
    if (!c.is_replicated() && c.grid().cols() == 1) ta = target(m, k, c.grid(), c.mb(), k);
    if (!c.is_replicated() && c.grid().rows() == 1) tb = target(k, n, c.grid(), k, c.nb());
    options.push_back(candidate(GemmAlgorithm::local, va, vb, va.is_replicated() ? va : ta,
                                vb.is_replicated() ? vb : tb, 0, ranks));
    options.push_back(candidate(GemmAlgorithm::local, va, vb, ta, tb, 0, ranks));
  }
  // reduce: keep an operand already split along k only, match the other to it.
  {
    Layout ta = target(m, k, ProcessGrid(1, ranks), m, std::max<std::int64_t>(1, ceil_div(k, ranks)));
    Layout tb = target(k, n, ProcessGrid(ranks, 1), ta.nb(), n);
    if (!va.is_replicated() && va.grid().rows() == 1) {
      ta = va;
      tb = target(k, n, va.grid().transposed(), va.nb(), n);
    } else if (!vb.is_replicated() && vb.grid().cols() == 1) {
      tb = vb;
      ta = target(m, k, vb.grid().transposed(), m, vb.mb());
    }
    options.push_back(candidate(GemmAlgorithm::reduce, va, vb, ta, tb, reduce_traffic, ranks));
  }
  // summa on C's grid; an operand already in place keeps its k blocking, and
  // the other takes it.
  if (!c.is_replicated()) {
    const bool keep_a = !va.is_replicated() && va.grid() == c.grid() && va.row_map() == c.row_map();
    const bool keep_b = !vb.is_replicated() && vb.grid() == c.grid() && vb.col_map() == c.col_map();
    std::int64_t kb = std::clamp<std::int64_t>(ceil_div(k, std::max(pr, pc)), 1, 256);
    if (keep_a) kb = va.nb();
    else if (keep_b) kb = vb.mb();
    const Layout ta = keep_a ? va : target(m, k, c.grid(), c.mb(), kb);
    const Layout tb = keep_b ? vb : target(k, n, c.grid(), kb, c.nb());
    options.push_back(candidate(GemmAlgorithm::summa, va, vb, ta, tb, panels, ranks));
  }
  // Only candidates whose layouts fit their algorithm count (a local plan,
  // say, needs C's blocks to line up with whole rows or columns).
  const GemmPlan* best = nullptr;
  for (const GemmPlan& o : options) {
    if (force && o.algorithm != *force) continue;
    const bool fits = o.algorithm == GemmAlgorithm::local    ? local_fits(o.op_a, o.op_b, c, ranks)
                      : o.algorithm == GemmAlgorithm::reduce ? reduce_fits(o.op_a, o.op_b, ranks)
                                                             : summa_fits(o.op_a, o.op_b, c);
    if (fits && (!best || o.received < best->received)) best = &o;
  }
  MAGMADNN_CHECK(best != nullptr, NotSupportedError,
                 "gemm: " << (force ? gemm_algorithm_name(*force) : "no algorithm") << " cannot compute C "
                          << c.str() << " from op(A) " << va.str() << ", op(B) " << vb.str());
  return *best;
}

}  // namespace magmadnn::distributed::dmath
