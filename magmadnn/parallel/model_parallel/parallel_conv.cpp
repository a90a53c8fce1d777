#include "magmadnn/parallel/model_parallel/parallel_conv.h"

namespace magmadnn::distributed::mp {

template <typename T>
op::Expr<T> channel_parallel_conv2d(const op::Expr<T>& x, const op::Expr<T>& w, const op::Expr<T>& b,
                                    GroupPtr group, std::int64_t out_channels, const conv::ConvParams& params,
                                    bool gather_output, conv::Algo algo) {
  MAGMADNN_CHECK(group != nullptr, ValueError, "channel_parallel_conv2d: needs a communicator for its group");
  MAGMADNN_CHECK(params.groups == 1, ValueError,
                 "channel_parallel_conv2d: grouped convolution (groups = "
                     << params.groups << ") is not supported: its output channels are tied to input-channel groups");
  const int p = group->size(), r = group->rank();
  MAGMADNN_CHECK(out_channels >= p, ShapeError,
                 "channel_parallel_conv2d: " << out_channels << " output channels cannot be split over " << p
                                             << " ranks (each needs at least one)");
  const Shard s = shard_of(out_channels, p, r);
  const Shape ws = w->get_output_shape();
  MAGMADNN_CHECK(ws.ndim() == 4 && ws[0] == s.extent, ShapeError,
                 "channel_parallel_conv2d: rank " << r << " of " << p << " holds filters [" << s.offset << ", "
                                                  << s.offset + s.extent << ") of " << out_channels
                                                  << ", so w must be {" << s.extent << ", C, kh, kw}, got " << ws);
  if (b) {
    const Shape bs = b->get_output_shape();
    MAGMADNN_CHECK(bs.ndim() == 1 && bs[0] == s.extent, ShapeError,
                   "channel_parallel_conv2d: rank " << r << " holds " << s.extent << " of the " << out_channels
                                                    << " biases, so b must be {" << s.extent << "}, got " << bs);
  }
  op::Expr<T> xr = copy_to_group(x, group);
  op::Expr<T> y = b ? op::conv2d(xr, w, b, params, algo) : op::conv2d(xr, w, params, algo);
  return gather_output ? gather_channels(y, std::move(group), out_channels) : y;
}

#define MAGMADNN_INSTANTIATE(T)                                                                                    \
  template op::Expr<T> channel_parallel_conv2d(const op::Expr<T>&, const op::Expr<T>&, const op::Expr<T>&,       \
                                               GroupPtr, std::int64_t, const conv::ConvParams&, bool, conv::Algo);
MAGMADNN_INSTANTIATE(float)
MAGMADNN_INSTANTIATE(double)
#undef MAGMADNN_INSTANTIATE

}  // namespace magmadnn::distributed::mp
