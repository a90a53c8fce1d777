#include "magmadnn/conv/conv_params.h"

#include <sstream>

#include "magmadnn/core/errors.h"

namespace magmadnn::conv {

double ConvProblem::macs() const {
  return double(n) * double(k) * double(p) * double(q) * double(c / geom.groups) * double(r) * double(s);
}

std::string ConvProblem::to_string() const {
  std::ostringstream os;
  os << "n" << n << " c" << c << " h" << h << " w" << w << " k" << k << " r" << r << " s" << s << " pad"
     << geom.pad_h << "," << geom.pad_w << " str" << geom.stride_h << "," << geom.stride_w << " dil"
     << geom.dilation_h << "," << geom.dilation_w << " g" << geom.groups;
  if (blocked()) os << " blk" << x_block << "," << y_block;
  return os.str();
}

std::int64_t conv_out_size(std::int64_t in, std::int64_t k, std::int64_t pad, std::int64_t stride,
                           std::int64_t dil) {
  const std::int64_t span = in + 2 * pad - dil * (k - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

ConvProblem make_problem(const Shape& x, const Shape& w, const ConvParams& g) {
  auto where = [&]() {
    std::ostringstream os;
    os << "conv2d: input " << x << ", filters " << w << ", pad " << g.pad_h << "," << g.pad_w << " stride "
       << g.stride_h << "," << g.stride_w << " dilation " << g.dilation_h << "," << g.dilation_w << " groups "
       << g.groups;
    return os.str();
  };
  MAGMADNN_CHECK(x.ndim() == 4 && w.ndim() == 4, ShapeError,
                 where() << ": input must be {N, C, H, W} and filters {K, C/groups, R, S}");
  MAGMADNN_CHECK(g.groups >= 1 && g.stride_h >= 1 && g.stride_w >= 1 && g.dilation_h >= 1 && g.dilation_w >= 1 &&
                     g.pad_h >= 0 && g.pad_w >= 0,
                 ShapeError, where() << ": strides, dilations and groups must be >= 1 and padding >= 0");
  ConvProblem pr;
  pr.n = x[0], pr.c = x[1], pr.h = x[2], pr.w = x[3];
  pr.k = w[0], pr.r = w[2], pr.s = w[3];
  pr.geom = g;
  MAGMADNN_CHECK(pr.c % g.groups == 0 && pr.k % g.groups == 0, ShapeError,
                 where() << ": input channels " << pr.c << " and filters " << pr.k << " must divide by groups");
  MAGMADNN_CHECK(w[1] * g.groups == pr.c, ShapeError,
                 where() << ": filters have " << w[1] << " input channels, expected C/groups = " << pr.c / g.groups);
  MAGMADNN_CHECK(pr.r >= 1 && pr.s >= 1 && pr.n >= 1 && pr.k >= 1, ShapeError, where() << ": empty dimension");
  pr.p = conv_out_size(pr.h, pr.r, g.pad_h, g.stride_h, g.dilation_h);
  pr.q = conv_out_size(pr.w, pr.s, g.pad_w, g.stride_w, g.dilation_w);
  MAGMADNN_CHECK(pr.p >= 1 && pr.q >= 1, ShapeError,
                 where() << ": the (dilated) kernel is larger than the padded image, so the output is empty");
  return pr;
}

Shape pool_output_shape(const Shape& x, const PoolParams& p) {
  MAGMADNN_CHECK(x.ndim() == 4, ShapeError, "pooling: input must be {N, C, H, W}, got " << x);
  MAGMADNN_CHECK(p.kernel_h >= 1 && p.kernel_w >= 1 && p.stride_h >= 1 && p.stride_w >= 1 && p.pad_h >= 0 &&
                     p.pad_w >= 0,
                 ShapeError,
                 "pooling: window " << p.kernel_h << "x" << p.kernel_w << ", stride " << p.stride_h << ","
                                    << p.stride_w << ", pad " << p.pad_h << "," << p.pad_w << " is invalid");
  MAGMADNN_CHECK(p.pad_h < p.kernel_h && p.pad_w < p.kernel_w, ShapeError,
                 "pooling: padding " << p.pad_h << "," << p.pad_w << " must be smaller than the window "
                                     << p.kernel_h << "x" << p.kernel_w);
  const std::int64_t oh = conv_out_size(x[2], p.kernel_h, p.pad_h, p.stride_h, 1);
  const std::int64_t ow = conv_out_size(x[3], p.kernel_w, p.pad_w, p.stride_w, 1);
  MAGMADNN_CHECK(oh >= 1 && ow >= 1, ShapeError,
                 "pooling: window " << p.kernel_h << "x" << p.kernel_w << " does not fit input " << x);
  return Shape{x[0], x[1], oh, ow};
}

}  // namespace magmadnn::conv
