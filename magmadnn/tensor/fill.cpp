// Tensor<T>::fill: deterministic fills run as kernels where the data lives;
// structured fills (IDENTITY, DIAGONAL, MASK) and the storage-only types are
// built on the host and copied, since they are set-up work, not a hot path.
#include <cmath>
#include <vector>

#include "magmadnn/core/errors.h"
#include "magmadnn/core/random.h"
#include "magmadnn/tensor/dispatch.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn {
namespace {

struct Fans {
  double in, out;
};

Fans fans_of(const Shape& s) {
  if (s.ndim() == 0) return {1, 1};
  if (s.ndim() == 1) return {double(s.dims()[0]), double(s.dims()[0])};
  double rf = 1;
  for (std::int64_t i = 2; i < s.ndim(); ++i) rf *= double(s.dims()[i]);
  return {double(s.dims()[1]) * rf, double(s.dims()[0]) * rf};
}

template <typename T>
double value_or(const tensor_filler_t<T>& f, std::size_t i, double dflt) {
  return f.values.size() > i ? static_cast<double>(static_cast<float>(f.values[i])) : dflt;
}

// A random fill resolved to a distribution: uniform [a, b) or normal (a, b).
struct RandomPlan {
  bool normal;
  double a, b;
};

template <typename T>
bool random_plan(const tensor_filler_t<T>& f, const Shape& shape, RandomPlan* p) {
  switch (f.fill_type) {
    case UNIFORM: *p = {false, value_or(f, 0, 0.0), value_or(f, 1, 1.0)}; return true;
    case GAUSSIAN: *p = {true, value_or(f, 0, 0.0), value_or(f, 1, 1.0)}; return true;
    case GLOROT: {
      // MagmaDNN v1 wrote `{GLOROT, {mean, std}}` and meant a plain normal
      // distribution; keep that meaning so v1 initialisers are not read as a
      // gain (a gain of 0.0 would silently zero every weight).
      if (f.values.size() >= 2) {
        *p = {true, value_or(f, 0, 0.0), value_or(f, 1, 1.0)};
        return true;
      }
      const Fans fn = fans_of(shape);
      const double a = value_or(f, 0, 1.0) * std::sqrt(6.0 / std::max(1.0, fn.in + fn.out));
      *p = {false, -a, a};
      return true;
    }
    case HE: {
      const Fans fn = fans_of(shape);
      *p = {true, 0.0, value_or(f, 0, 1.0) * std::sqrt(2.0 / std::max(1.0, fn.in))};
      return true;
    }
    default: return false;
  }
}

// Host values of a fill, in double, for the structured fills and for the
// storage-only element types.
template <typename T>
std::vector<double> host_values(const tensor_filler_t<T>& f, const Shape& shape) {
  const std::int64_t n = shape.numel();
  std::vector<double> v(static_cast<std::size_t>(n), 0.0);
  RandomPlan rp;
  if (random_plan(f, shape, &rp)) {
    const std::uint64_t seed = get_seed(), stream = next_random_stream();
    std::vector<double> tmp(v.size());
    if (rp.normal) {
      cpu_backend().kernels_f64().fill_normal(tmp.data(), n, rp.a, rp.b, seed, stream);
    } else {
      cpu_backend().kernels_f64().fill_uniform(tmp.data(), n, rp.a, rp.b, seed, stream);
    }
    return tmp;
  }
  switch (f.fill_type) {
    case ZERO: break;
    case ONE: std::fill(v.begin(), v.end(), 1.0); break;
    case CONSTANT: std::fill(v.begin(), v.end(), value_or(f, 0, 0.0)); break;
    case IDENTITY:
    case DIAGONAL: {
      MAGMADNN_CHECK(shape.ndim() == 2, ShapeError,
                     (f.fill_type == IDENTITY ? "IDENTITY" : "DIAGONAL") << " fill needs a 2-D tensor, got shape " << shape);
      const std::int64_t rows = shape.dims()[0], cols = shape.dims()[1], d = std::min(rows, cols);
      if (f.fill_type == DIAGONAL) {
        MAGMADNN_CHECK(f.values.size() == 1 || static_cast<std::int64_t>(f.values.size()) == d, ValueError,
                       "DIAGONAL fill of shape " << shape << " needs 1 or " << d << " values, got " << f.values.size());
      }
      for (std::int64_t i = 0; i < d; ++i) {
        v[static_cast<std::size_t>(i * cols + i)] =
            f.fill_type == IDENTITY ? 1.0 : value_or(f, f.values.size() == 1 ? 0 : static_cast<std::size_t>(i), 0.0);
      }
      break;
    }
    case MASK: {
      const double p = value_or(f, 0, 0.5);
      MAGMADNN_CHECK(p >= 0.0 && p <= 1.0, ValueError, "MASK fill probability " << p << " is outside [0, 1]");
      std::vector<double> u(v.size());
      cpu_backend().kernels_f64().fill_uniform(u.data(), n, 0.0, 1.0, get_seed(), next_random_stream());
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = u[i] < p ? 1.0 : 0.0;
      break;
    }
    default: break;
  }
  return v;
}

template <typename T>
void fill_impl(Tensor<T>& t, const tensor_filler_t<T>& f) {
  if (f.fill_type == NONE || t.size() == 0) return;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    Backend& b = backend_of(t);
    Kernels<T>& k = kernels<T>(b);
    RandomPlan rp;
    if (random_plan(f, t.shape(), &rp)) {
      const std::uint64_t seed = get_seed(), stream = next_random_stream();
      if (rp.normal) k.fill_normal(t.mutable_data(), t.size(), T(rp.a), T(rp.b), seed, stream);
      else k.fill_uniform(t.mutable_data(), t.size(), T(rp.a), T(rp.b), seed, stream);
      return;
    }
    if (f.fill_type == ZERO || f.fill_type == ONE || f.fill_type == CONSTANT) {
      const T value = f.fill_type == ZERO ? T(0) : f.fill_type == ONE ? T(1) : T(value_or(f, 0, 0.0));
      k.fill(t.mutable_data(), t.size(), value);
      return;
    }
  }
  const std::vector<double> v = host_values(f, t.shape());
  std::vector<T> cv(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) cv[i] = static_cast<T>(static_cast<float>(v[i]));
  if constexpr (std::is_same_v<T, double> || std::is_integral_v<T>) {
    for (std::size_t i = 0; i < v.size(); ++i) cv[i] = static_cast<T>(v[i]);
  }
  t.copy_from_host(cv.data(), t.size());
}

}  // namespace

template <typename T>
void Tensor<T>::fill(const tensor_filler_t<T>& filler) {
  fill_impl(*this, filler);
}

template void Tensor<float>::fill(const tensor_filler_t<float>&);
template void Tensor<double>::fill(const tensor_filler_t<double>&);
template void Tensor<half>::fill(const tensor_filler_t<half>&);
template void Tensor<bfloat16>::fill(const tensor_filler_t<bfloat16>&);
template void Tensor<std::int32_t>::fill(const tensor_filler_t<std::int32_t>&);
template void Tensor<std::int64_t>::fill(const tensor_filler_t<std::int64_t>&);

}  // namespace magmadnn
