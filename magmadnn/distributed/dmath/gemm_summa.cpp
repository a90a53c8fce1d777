// gemm.h's SUMMA (van de Geijn and Watts, 1997) on C's process grid.
//
// k is cut into panels at every block boundary of op(A)'s columns and of
// op(B)'s rows (adjacent pieces with the same owners and contiguous local
// storage are merged, so a dimension dealt to one process is one panel).
// For panel t, the grid column that owns it sends its rows of the A panel
// along each grid row, the grid row that owns it sends the B panel down
// each grid column, and every rank adds A_panel * B_panel to its block of C.
// Panel t + 1's messages are posted before panel t's product, so transfer
// and arithmetic overlap. A panel that is a strided piece of the local
// matrix is packed once, on its owner, then sent; a contiguous one goes as
// it is. The broadcasts are flat (the owner sends to each member), which
// suits the small grids of a node; a ring or tree would suit large ones.
#include <algorithm>
#include <vector>

#include "magmadnn/distributed/dmath/gemm.h"
#include "magmadnn/distributed/dmath/local_gemm.h"
#include "magmadnn/distributed/dmath/operand.h"

namespace magmadnn::distributed::dmath::detail {
namespace {

struct Panel {
  std::int64_t begin = 0, width = 0;  // global k range
  int a_owner = 0, b_owner = 0;       // grid column owning op(A)'s columns, grid row owning op(B)'s rows
  std::int64_t a_local = 0, b_local = 0;  // where it starts in those owners' local storage
};

std::vector<Panel> panels(const BlockCyclic1D& ka, const BlockCyclic1D& kb) {
  std::vector<Panel> out;
  for (std::int64_t g = 0; g < ka.n;) {
    const std::int64_t end = std::min(ka.block_end(g), kb.block_end(g));
    Panel p{g, end - g, ka.owner(g), kb.owner(g), ka.local_index(g), kb.local_index(g)};
    if (!out.empty()) {
      Panel& last = out.back();
      if (last.a_owner == p.a_owner && last.b_owner == p.b_owner && last.a_local + last.width == p.a_local &&
          last.b_local + last.width == p.b_local) {
        last.width += p.width;
        g = end;
        continue;
      }
    }
    out.push_back(p);
    g = end;
  }
  return out;
}

// One panel in flight: where this rank reads its A and B pieces from (its own
// storage, a packed copy of it, or a received copy), and the transfers.
template <typename T>
struct Slot {
  std::vector<T> a_buf, b_buf;
  const T* a = nullptr;
  const T* b = nullptr;
  std::int64_t lda = 0, ldb = 0;
  bool ta = false, tb = false;
  std::vector<RequestPtr> transfers;
};

}  // namespace

template <typename T>
void gemm_summa(T alpha, const Operand<T>& a, const Operand<T>& b, T beta, DistMatrix<T>& c) {
  Communicator& comm = c.comm();
  const Layout& lc = c.layout();
  const ProcessGrid& grid = lc.grid();
  const int me = comm.rank(), i = grid.row_of(me), j = grid.col_of(me);
  if (i < 0) return;  // off the grid: no part of C, no panel to pass on
  const std::int64_t m = c.local_rows(), n = c.local_cols();
  scale(c.local_data(), m * n, beta);
  const std::vector<Panel> plan = panels(a.layout.col_map(), b.layout.row_map());

  const auto start = [&](const Panel& p, Slot<T>& s) {
    const std::int64_t w = p.width;
    // A panel: m x w of op(A), held by grid column p.a_owner.
    if (m > 0) {
      s.ta = a.trans;
      if (j == p.a_owner) {
        if (a.trans) {  // stored rows: contiguous w x m
          s.a = a.data + p.a_local * a.ld;
          s.lda = a.ld;
        } else if (grid.cols() == 1) {  // nobody to send to: read in place
          s.a = a.data + p.a_local;
          s.lda = a.ld;
        } else {
          s.a_buf.resize(static_cast<std::size_t>(m * w));
          for (std::int64_t r = 0; r < m; ++r)
            std::copy_n(a.data + r * a.ld + p.a_local, w, s.a_buf.data() + r * w);
          s.a = s.a_buf.data();
          s.lda = w;
        }
        for (int jj = 0; jj < grid.cols(); ++jj)
          if (jj != j) s.transfers.push_back(comm.isend(host_buffer(s.a, static_cast<std::size_t>(m * w)),
                                                        grid.rank_of(i, jj), kSummaTagA));
      } else {
        s.a_buf.resize(static_cast<std::size_t>(m * w));
        s.transfers.push_back(
            comm.irecv(host_buffer(s.a_buf.data(), s.a_buf.size()), grid.rank_of(i, p.a_owner), kSummaTagA));
        s.a = s.a_buf.data();
        s.lda = a.trans ? m : w;
      }
    }
    // B panel: w x n of op(B), held by grid row p.b_owner.
    if (n > 0) {
      s.tb = b.trans;
      if (i == p.b_owner) {
        if (!b.trans) {  // stored rows: contiguous w x n
          s.b = b.data + p.b_local * b.ld;
          s.ldb = b.ld;
        } else if (grid.rows() == 1) {
          s.b = b.data + p.b_local;
          s.ldb = b.ld;
        } else {  // stored columns of an n x k_local matrix: pack as n x w
          s.b_buf.resize(static_cast<std::size_t>(n * w));
          for (std::int64_t r = 0; r < n; ++r)
            std::copy_n(b.data + r * b.ld + p.b_local, w, s.b_buf.data() + r * w);
          s.b = s.b_buf.data();
          s.ldb = w;
        }
        for (int ii = 0; ii < grid.rows(); ++ii)
          if (ii != i) s.transfers.push_back(comm.isend(host_buffer(s.b, static_cast<std::size_t>(n * w)),
                                                        grid.rank_of(ii, j), kSummaTagB));
      } else {
        s.b_buf.resize(static_cast<std::size_t>(n * w));
        s.transfers.push_back(
            comm.irecv(host_buffer(s.b_buf.data(), s.b_buf.size()), grid.rank_of(p.b_owner, j), kSummaTagB));
        s.b = s.b_buf.data();
        s.ldb = b.trans ? w : n;
      }
    }
  };

  Slot<T> slots[2];
  if (!plan.empty()) start(plan[0], slots[0]);
  for (std::size_t t = 0; t < plan.size(); ++t) {
    Slot<T>& s = slots[t % 2];
    if (t + 1 < plan.size()) start(plan[t + 1], slots[(t + 1) % 2]);
    wait_all(s.transfers);
    s.transfers.clear();
    local_gemm(s.ta, s.tb, m, n, plan[t].width, alpha, s.a, s.lda, s.b, s.ldb, T(1), c.local_data(), n);
  }
}

template void gemm_summa<float>(float, const Operand<float>&, const Operand<float>&, float, DistMatrix<float>&);
template void gemm_summa<double>(double, const Operand<double>&, const Operand<double>&, double,
                                 DistMatrix<double>&);

}  // namespace magmadnn::distributed::dmath::detail
