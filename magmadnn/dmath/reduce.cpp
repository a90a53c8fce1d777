#include "magmadnn/dmath/reduce.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "magmadnn/core/errors.h"
#include "magmadnn/dmath/local_runs.h"
#include "magmadnn/dmath/reduce_detail.h"

namespace magmadnn::distributed::dmath {
namespace detail {

void check_reduce_op(const char* where, ReduceOp op) {
  MAGMADNN_CHECK(op == ReduceOp::sum || op == ReduceOp::max || op == ReduceOp::min, ValueError,
                 "dmath::" << where << ": " << reduce_op_name(op)
                           << " is not a reduction of a matrix (use sum, max or min; divide a sum for a mean)");
}

bool counts_here(const Layout& l, int rank) noexcept {
  if (!l.holds(rank)) return false;
  if (!l.is_replicated() || l.group().empty()) return true;
  return rank == l.group().front();
}

bool whole_everywhere(const Layout& l) noexcept { return l.is_replicated() && l.group().empty(); }

}  // namespace detail

namespace {

using detail::identity;
using detail::combine;

// Folds a[0..len) into *into (one_slot: a run of one row) or into
// into[0..len) elementwise (a run of one column each). The op is chosen
// once per run, not per element, so a column sum is a plain vector add.
template <typename T>
void fold_run(ReduceOp op, const T* a, std::int64_t len, T* into, bool one_slot) {
  if (one_slot) {
    for (std::int64_t t = 0; t < len; ++t) *into = combine(op, *into, a[t]);
  } else if (op == ReduceOp::sum) {
    for (std::int64_t t = 0; t < len; ++t) into[t] += a[t];
  } else {
    for (std::int64_t t = 0; t < len; ++t) into[t] = combine(op, into[t], a[t]);
  }
}

// Reduces A along one dimension: `along_rows` folds each row into out(i, 0),
// else each column into out(0, j). `n` is the length of the result.
template <typename T>
void reduce_lines(const DistMatrix<T>& A, ReduceOp op, DistMatrix<T>& out, bool along_rows, const char* where) {
  detail::check_reduce_op(where, op);
  MAGMADNN_CHECK(&A.comm() == &out.comm(), ValueError,
                 "dmath::" << where << ": A and out live on different communicators");
  const std::int64_t n = along_rows ? A.rows() : A.cols();
  MAGMADNN_CHECK(along_rows ? (out.rows() == n && out.cols() == 1) : (out.rows() == 1 && out.cols() == n), ShapeError,
                 "dmath::" << where << ": out is " << out.rows() << "x" << out.cols() << ", the reduction of a "
                           << A.rows() << "x" << A.cols() << " matrix is " << (along_rows ? n : 1) << "x"
                           << (along_rows ? 1 : n));
  const Layout& l = A.layout();
  const int rank = A.comm().rank();
  const T id = identity<T>(op);

  // Each reduced line whole on its rank, and out split as A's other dimension
  // (the same grid line, blocks and ranks): every rank finishes its own part.
  if (!l.is_replicated() && (along_rows ? l.grid().cols() : l.grid().rows()) == 1) {
    const Layout aligned = along_rows ? Layout::block_cyclic(A.rows(), 1, l.grid(), l.mb(), 1)
                                      : Layout::block_cyclic(1, A.cols(), l.grid(), 1, l.nb());
    if (out.layout() == aligned) {
      T* o = out.local_data();
      std::fill_n(o, out.local_rows() * out.local_cols(), id);
      for (std::int64_t li = 0; li < A.local_rows(); ++li)
        for (std::int64_t lj = 0; lj < A.local_cols(); ++lj) {
          T& slot = o[along_rows ? li : lj];
          slot = combine(op, slot, A.local(li, lj));
        }
      out.mark_changed();
      return;
    }
  }

  std::vector<T> partial(static_cast<std::size_t>(n), id);
  if (detail::counts_here(l, rank)) {
    detail::for_each_local_run(l, rank, [&](std::int64_t li, std::int64_t lj, std::int64_t i, std::int64_t j,
                                            std::int64_t len) {
      fold_run(op, &A.local(li, lj), len, partial.data() + (along_rows ? i : j), along_rows);
    });
  }
  if (!detail::whole_everywhere(l) && A.comm().size() > 1 && n > 0)
    A.comm().allreduce(host_buffer(partial.data(), partial.size()), op);
  detail::for_each_local_run(out.layout(), rank, [&](std::int64_t li, std::int64_t lj, std::int64_t i, std::int64_t j,
                                                     std::int64_t len) {
    if (along_rows) std::fill_n(&out.local(li, lj), len, partial[static_cast<std::size_t>(i)]);
    else std::copy_n(partial.data() + j, len, &out.local(li, lj));
  });
  out.mark_changed();
}

}  // namespace

template <typename T>
void reduce_rows(const DistMatrix<T>& A, ReduceOp op, DistMatrix<T>& out) {
  reduce_lines(A, op, out, true, "reduce_rows");
}

template <typename T>
void reduce_cols(const DistMatrix<T>& A, ReduceOp op, DistMatrix<T>& out) {
  reduce_lines(A, op, out, false, "reduce_cols");
}

template <typename T>
T reduce_all(const DistMatrix<T>& A, ReduceOp op) {
  detail::check_reduce_op("reduce_all", op);
  T r = identity<T>(op);
  if (detail::counts_here(A.layout(), A.comm().rank())) {
    const T* a = A.local_data();
    for (std::int64_t k = 0; k < A.local_rows() * A.local_cols(); ++k) r = combine(op, r, a[k]);
  }
  if (!detail::whole_everywhere(A.layout()) && A.comm().size() > 1) A.comm().allreduce(host_buffer(&r, 1), op);
  return r;
}

#define MAGMADNN_DMATH_REDUCE(T)                                               \
  template void reduce_rows<T>(const DistMatrix<T>&, ReduceOp, DistMatrix<T>&); \
  template void reduce_cols<T>(const DistMatrix<T>&, ReduceOp, DistMatrix<T>&); \
  template T reduce_all<T>(const DistMatrix<T>&, ReduceOp);
MAGMADNN_DMATH_REDUCE(float)
MAGMADNN_DMATH_REDUCE(double)
#undef MAGMADNN_DMATH_REDUCE

}  // namespace magmadnn::distributed::dmath
