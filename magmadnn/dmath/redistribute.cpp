#include "magmadnn/dmath/redistribute.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "magmadnn/core/errors.h"
#include "magmadnn/dmath/gathered.h"
#include "magmadnn/dmath/local_runs.h"
#include "magmadnn/dmath/plan_cache_detail.h"
#include "magmadnn/dmath/runs.h"

namespace magmadnn::distributed::dmath {
namespace {

using detail::Run;

// The piece that the rank at source coordinate (sr, sc) sends to the rank at
// target coordinate (dr, dc), walked in message order: f(global row, run of
// columns) for every selected row and column run.
template <typename F>
void walk_piece(const std::vector<Run>& row_runs, const std::vector<Run>& col_runs, int sr, int sc, int dr, int dc,
                F&& f) {
  std::vector<Run> cols;
  for (const Run& cr : col_runs)
    if (cr.src == sc && cr.dst == dc) cols.push_back(cr);
  if (cols.empty()) return;
  for (const Run& rr : row_runs) {
    if (rr.src != sr || rr.dst != dr) continue;
    for (std::int64_t i = rr.begin; i < rr.end; ++i)
      for (const Run& cr : cols) f(i, cr);
  }
}

// Element-wise copy that converts S to D (a plain copy when they agree).
template <typename S, typename D>
D* convert_n(const S* src, std::int64_t n, D* dst) {
  return std::transform(src, src + n, dst, [](S v) { return static_cast<D>(v); });
}

template <typename S, typename D>
void copy_to_replicated(const DistMatrix<S>& from, DistMatrix<D>& to) {
  Communicator& comm = from.comm();
  const Layout& lf = from.layout();
  const std::int64_t slot = lf.max_local_size();
  std::vector<S> mine;
  detail::pad_local(from.local_data(), from.local_rows() * from.local_cols(), slot, mine);
  std::vector<S> all(static_cast<std::size_t>(slot) * static_cast<std::size_t>(comm.size()));
  comm.allgather(host_buffer(static_cast<const S*>(mine.data()), mine.size()), host_buffer(all.data(), all.size()));
  if (to.layout().holds(comm.rank())) detail::unpack_gathered(lf, comm.size(), all.data(), slot, to.local_data());
}

// What one rank of a group does in a redistribution between two layouts:
// the runs of both dimensions, and the size of every piece it receives and
// sends (self excluded, empty pieces left out). Depends on the layouts, the
// group's size and the rank only, so it is kept (plan_cache.h).
struct RedistributePlan {
  std::vector<Run> row_runs, col_runs;
  std::vector<std::pair<int, std::int64_t>> receives, sends;  // (rank, elements)
};

RedistributePlan make_plan(const Layout& lf, const Layout& lt, int ranks, int me) {
  RedistributePlan plan;
  plan.row_runs = detail::runs(lf.row_map(), lt.row_map());
  plan.col_runs = detail::runs(lf.col_map(), lt.col_map());
  const auto piece_size = [&](int s, int d) {
    return detail::count(plan.row_runs, lf.grid_row(s), lt.grid_row(d)) *
           detail::count(plan.col_runs, lf.grid_col(s), lt.grid_col(d));
  };
  // A replicated source serves each of its holders from its own copy, and
  // each other rank from one holder (spread over them); otherwise each
  // element has exactly one source, its owner.
  const auto replica_for = [&](int d) {
    if (lf.holds(d)) return d;
    const std::vector<int>& group = lf.group();
    return group[static_cast<std::size_t>(d) % group.size()];
  };
  const auto is_source = [&](int s, int d) { return lf.is_replicated() ? replica_for(d) == s : lf.holds(s); };
  if (lt.grid_row(me) >= 0) {
    for (int s = 0; s < ranks; ++s) {
      if (s == me || !is_source(s, me)) continue;
      if (const std::int64_t n = piece_size(s, me); n > 0) plan.receives.emplace_back(s, n);
    }
  }
  if (lf.grid_row(me) >= 0) {
    for (int d = 0; d < ranks; ++d) {
      if (d == me || !is_source(me, d) || lt.grid_row(d) < 0) continue;
      if (const std::int64_t n = piece_size(me, d); n > 0) plan.sends.emplace_back(d, n);
    }
  }
  return plan;
}


}  // namespace

template <typename S, typename D>
void redistribute(const DistMatrix<S>& from, DistMatrix<D>& to) {
  const Layout& lf = from.layout();
  const Layout& lt = to.layout();
  MAGMADNN_CHECK(&from.comm() == &to.comm(), ValueError,
                 "redistribute: both matrices must live on the same communicator (from " << lf.str() << ", to "
                                                                                         << lt.str() << ")");
  MAGMADNN_CHECK(lf.rows() == lt.rows() && lf.cols() == lt.cols(), ShapeError,
                 "redistribute: shapes differ: from " << lf.str() << ", to " << lt.str());
  Communicator& comm = from.comm();
  const int me = comm.rank(), ranks = comm.size();
  if (lf == lt) {
    convert_n(from.local_data(), from.local_rows() * from.local_cols(), to.local_data());
    to.mark_changed();
    return;
  }
  // Onto every rank from a split source: one allgather beats P^2 messages.
  // (Onto a subgroup, or from copies, point to point sends less.)
  if (lt.is_replicated() && lt.group().empty() && !lf.is_replicated() && ranks > 1) {
    copy_to_replicated(from, to);
    to.mark_changed();
    return;
  }

  const std::string key = lf.str() + " -> " + lt.str() + " / " + std::to_string(ranks) + " @" + std::to_string(me);
  const std::shared_ptr<const RedistributePlan> plan =
      detail::plan_store<RedistributePlan>().get(key, [&] { return make_plan(lf, lt, ranks, me); });
  const std::vector<Run>& row_runs = plan->row_runs;
  const std::vector<Run>& col_runs = plan->col_runs;
  const BlockCyclic1D frm = lf.row_map(), fcm = lf.col_map(), trm = lt.row_map(), tcm = lt.col_map();

  // Buffers first, so that the requests (destroyed first) are waited for
  // before any buffer they use goes away.
  std::vector<std::vector<S>> inbox(static_cast<std::size_t>(ranks)), outbox(static_cast<std::size_t>(ranks));
  std::vector<RequestPtr> requests;
  for (const auto& [s, n] : plan->receives) {
    inbox[s].resize(static_cast<std::size_t>(n));
    requests.push_back(comm.irecv(host_buffer(inbox[s].data(), inbox[s].size()), s, kRedistributeTag));
  }
  const int sr = lf.grid_row(me), sc = lf.grid_col(me);
  for (const auto& [d, n] : plan->sends) {
    std::vector<S>& out = outbox[d];
    out.resize(static_cast<std::size_t>(n));
    S* p = out.data();
    walk_piece(row_runs, col_runs, sr, sc, lt.grid_row(d), lt.grid_col(d), [&](std::int64_t i, const Run& cr) {
      const S* src = &from.local(frm.local_index(i), fcm.local_index(cr.begin));
      p = std::copy_n(src, cr.end - cr.begin, p);
    });
    requests.push_back(comm.isend(host_buffer(static_cast<const S*>(out.data()), out.size()), d, kRedistributeTag));
  }
  const int dr = lt.grid_row(me), dc = lt.grid_col(me);
  if (sr >= 0 && dr >= 0) {
    walk_piece(row_runs, col_runs, sr, sc, dr, dc, [&](std::int64_t i, const Run& cr) {
      convert_n(&from.local(frm.local_index(i), fcm.local_index(cr.begin)), cr.end - cr.begin,
                &to.local(trm.local_index(i), tcm.local_index(cr.begin)));
    });
  }
  wait_all(requests);
  for (int s = 0; s < ranks; ++s) {
    if (inbox[s].empty()) continue;
    const S* p = inbox[s].data();
    walk_piece(row_runs, col_runs, lf.grid_row(s), lf.grid_col(s), dr, dc, [&](std::int64_t i, const Run& cr) {
      const std::int64_t len = cr.end - cr.begin;
      convert_n(p, len, &to.local(trm.local_index(i), tcm.local_index(cr.begin)));
      p += len;
    });
  }
  to.mark_changed();
}

template void redistribute(const DistMatrix<float>&, DistMatrix<float>&);
template void redistribute(const DistMatrix<double>&, DistMatrix<double>&);
template void redistribute(const DistMatrix<float>&, DistMatrix<double>&);
template void redistribute(const DistMatrix<double>&, DistMatrix<float>&);

}  // namespace magmadnn::distributed::dmath
