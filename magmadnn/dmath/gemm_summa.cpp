// gemm.h's SUMMA (van de Geijn and Watts, 1997) on C's process grid.
//
// k is cut into panels at every block boundary of op(A)'s columns and of
// op(B)'s rows (adjacent pieces with the same owners and contiguous local
// storage are merged, so a dimension dealt to one process is one panel).
// For panel t, the grid column that owns it sends its rows of the A panel
// along each grid row, the grid row that owns it sends the B panel down
// each grid column, and every rank adds A_panel * B_panel to its block of C.
// Panel t + 1's messages are posted before panel t's product. How much of
// their transfer overlaps the product is up to the MPI library's progress:
// without an asynchronous progress thread, a message too large to go eagerly
// moves mostly inside the next wait. A panel that is a strided piece of the local
// matrix is packed once, on its owner, then sent; a contiguous one goes as
// it is. The broadcasts are flat (the owner sends to each member), which
// suits the small grids of a node; a ring or tree would suit large ones.
#include <algorithm>
#include <vector>

#include "magmadnn/dmath/gemm.h"
#include "magmadnn/dmath/local_gemm.h"
#include "magmadnn/dmath/operand.h"

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

// One operand's share of a panel on this rank: where the product reads it
// (the rank's own storage, a packed copy of it, or a received copy).
template <typename T>
struct PanelPiece {
  std::vector<T> buf;
  const T* data = nullptr;
  std::int64_t ld = 0;
};

// Posts one operand's panel of width w over a line of the grid (a process
// row for A, a column for B), `peers` being the other ranks of the line and
// `root` the one that holds the panel. The piece is `extent` x w of op(X),
// stored either as w whole rows of the local matrix (contiguous: sent as it
// is) or as w columns of it (packed first unless nobody needs it sent);
// either way it keeps the stored orientation, so op() still applies.
template <typename T>
void post_panel(Communicator& comm, const Operand<T>& x, bool as_rows, std::int64_t local_begin, std::int64_t extent,
                std::int64_t w, int root, const std::vector<int>& peers, int tag, PanelPiece<T>& piece,
                std::vector<RequestPtr>& transfers) {
  const std::size_t count = static_cast<std::size_t>(extent * w);
  if (count == 0) return;
  if (comm.rank() == root) {
    if (as_rows) {
      piece.data = x.data + local_begin * x.ld;
      piece.ld = x.ld;
    } else if (peers.empty()) {
      piece.data = x.data + local_begin;
      piece.ld = x.ld;
    } else {
      piece.buf.resize(count);
      for (std::int64_t r = 0; r < extent; ++r)
        std::copy_n(x.data + r * x.ld + local_begin, w, piece.buf.data() + r * w);
      piece.data = piece.buf.data();
      piece.ld = w;
    }
    for (int peer : peers) transfers.push_back(comm.isend(host_buffer(piece.data, count), peer, tag));
  } else {
    piece.buf.resize(count);
    transfers.push_back(comm.irecv(host_buffer(piece.buf.data(), count), root, tag));
    piece.data = piece.buf.data();
    piece.ld = as_rows ? extent : w;
  }
}

}  // namespace

template <typename T>
void gemm_summa(T alpha, const Operand<T>& a, const Operand<T>& b, T beta, DistMatrix<T>& c) {
  Communicator& comm = c.comm();
  const ProcessGrid& grid = c.layout().grid();
  const int me = comm.rank(), i = grid.row_of(me), j = grid.col_of(me);
  if (i < 0) return;  // off the grid: no part of C, no panel to pass on
  const std::int64_t m = c.local_rows(), n = c.local_cols();
  scale(c.local_data(), m * n, beta);
  const std::vector<Panel> plan = panels(a.layout.col_map(), b.layout.row_map());
  std::vector<int> row_peers, col_peers;
  for (int jj = 0; jj < grid.cols(); ++jj)
    if (jj != j) row_peers.push_back(grid.rank_of(i, jj));
  for (int ii = 0; ii < grid.rows(); ++ii)
    if (ii != i) col_peers.push_back(grid.rank_of(ii, j));

  // A panel of op(A) (m x w) is w stored rows when A is transposed; a panel
  // of op(B) (w x n) is w stored rows when B is not.
  struct Slot {
    PanelPiece<T> a, b;
    std::vector<RequestPtr> transfers;
  };
  const auto start = [&](const Panel& p, Slot& s) {
    const int a_root = grid.rank_of(i, p.a_owner), b_root = grid.rank_of(p.b_owner, j);
    post_panel(comm, a, a.trans, p.a_local, m, p.width, a_root,
               me == a_root ? row_peers : std::vector<int>{}, kSummaTagA, s.a, s.transfers);
    post_panel(comm, b, !b.trans, p.b_local, n, p.width, b_root,
               me == b_root ? col_peers : std::vector<int>{}, kSummaTagB, s.b, s.transfers);
  };
  Slot slots[2];
  if (!plan.empty()) start(plan[0], slots[0]);
  for (std::size_t t = 0; t < plan.size(); ++t) {
    Slot& s = slots[t % 2];
    if (t + 1 < plan.size()) start(plan[t + 1], slots[(t + 1) % 2]);
    wait_all(s.transfers);
    s.transfers.clear();
    local_gemm(a.trans, b.trans, m, n, plan[t].width, alpha, s.a.data, s.a.ld, s.b.data, s.b.ld, T(1),
               c.local_data(), n);
  }
}

template void gemm_summa<float>(float, const Operand<float>&, const Operand<float>&, float, DistMatrix<float>&);
template void gemm_summa<double>(double, const Operand<double>&, const Operand<double>&, double,
                                 DistMatrix<double>&);

}  // namespace magmadnn::distributed::dmath::detail
