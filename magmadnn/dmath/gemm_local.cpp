// gemm.h's local algorithm: every rank multiplies what it holds.
//
// A replicated operand serves whatever rows (columns) C's block needs; when
// C holds only some of them, they are gathered into a dense block first so
// that the product is one call to the host GEMM.
#include <vector>

#include "magmadnn/dmath/local_gemm.h"
#include "magmadnn/dmath/operand.h"

namespace magmadnn::distributed::dmath::detail {

template <typename T>
void gemm_local(T alpha, const Operand<T>& a, const Operand<T>& b, T beta, DistMatrix<T>& c) {
  const int me = c.comm().rank();
  const Layout& lc = c.layout();
  const std::int64_t m = c.local_rows(), n = c.local_cols(), k = a.layout.cols();
  if (m == 0 || n == 0) return;
  const T* pa = a.data;
  const T* pb = b.data;
  std::int64_t lda = a.ld, ldb = b.ld;
  bool ta = a.trans, tb = b.trans;
  std::vector<T> rows, cols;
  if (a.layout.is_replicated() && m != lc.rows()) {
    const BlockCyclic1D map = lc.row_map();
    const int ci = lc.grid_row(me);
    rows.resize(static_cast<std::size_t>(m * k));
    for (std::int64_t li = 0; li < m; ++li)
      for (std::int64_t p = 0; p < k; ++p) rows[li * k + p] = a.at(map.global_index(li, ci), p);
    pa = rows.data();
    lda = k;
    ta = false;
  }
  if (b.layout.is_replicated() && n != lc.cols()) {
    const BlockCyclic1D map = lc.col_map();
    const int cj = lc.grid_col(me);
    cols.resize(static_cast<std::size_t>(k * n));
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t lj = 0; lj < n; ++lj) cols[p * n + lj] = b.at(p, map.global_index(lj, cj));
    pb = cols.data();
    ldb = n;
    tb = false;
  }
  local_gemm(ta, tb, m, n, k, alpha, pa, lda, pb, ldb, beta, c.local_data(), n);
}

template void gemm_local<float>(float, const Operand<float>&, const Operand<float>&, float, DistMatrix<float>&);
template void gemm_local<double>(double, const Operand<double>&, const Operand<double>&, double,
                                 DistMatrix<double>&);

}  // namespace magmadnn::distributed::dmath::detail
