#include "magmadnn/parallel/model_parallel/parallel_linear.h"

namespace magmadnn::distributed::mp {

template <typename T>
op::Expr<T> column_parallel_linear(const op::Expr<T>& x, const op::Expr<T>& w, const op::Expr<T>& b,
                                   GroupPtr group, std::int64_t out, bool gather_output) {
  MAGMADNN_CHECK(group != nullptr, ValueError, "column_parallel_linear: needs a communicator for its group");
  const Shard s = shard_of(out, group->size(), group->rank());
  const Shape ws = w->get_output_shape();
  MAGMADNN_CHECK(out >= group->size() && ws.ndim() == 2 && ws[0] == s.extent, ShapeError,
                 "column_parallel_linear: rank " << group->rank() << " of " << group->size() << " holds rows ["
                                                 << s.offset << ", " << s.offset + s.extent << ") of the " << out
                                                 << "-row weight, so w must be {" << s.extent << ", in}, got "
                                                 << ws);
  op::Expr<T> xr = copy_to_group(x, group);
  op::Expr<T> y = b ? op::linear(xr, w, b) : op::linear(xr, w);
  return gather_output ? gather_columns(y, std::move(group), out) : y;
}

template <typename T>
op::Expr<T> row_parallel_linear(const op::Expr<T>& x, const op::Expr<T>& w, const op::Expr<T>& b, GroupPtr group,
                                bool input_is_split) {
  MAGMADNN_CHECK(group != nullptr, ValueError, "row_parallel_linear: needs a communicator for its group");
  op::Expr<T> xr = input_is_split ? x : scatter_columns(x, group);
  // The bias joins after the sum so that it counts once, not P times.
  op::Expr<T> y = reduce_from_group(op::linear(xr, w), std::move(group));
  return b ? op::add(y, b) : y;
}

template op::Expr<float> column_parallel_linear(const op::Expr<float>&, const op::Expr<float>&,
                                                const op::Expr<float>&, GroupPtr, std::int64_t, bool);
template op::Expr<double> column_parallel_linear(const op::Expr<double>&, const op::Expr<double>&,
                                                 const op::Expr<double>&, GroupPtr, std::int64_t, bool);
template op::Expr<float> row_parallel_linear(const op::Expr<float>&, const op::Expr<float>&, const op::Expr<float>&,
                                             GroupPtr, bool);
template op::Expr<double> row_parallel_linear(const op::Expr<double>&, const op::Expr<double>&,
                                              const op::Expr<double>&, GroupPtr, bool);

}  // namespace magmadnn::distributed::mp
