#include "magmadnn/data/transforms.h"

#include <algorithm>
#include <cmath>

#include "magmadnn/core/errors.h"

namespace magmadnn::data {

namespace {
bool host_readable(memory_t m) { return m == HOST || m == MANAGED || m == CUDA_MANAGED; }

// Channel count and elements per channel per image of {N, C, ...}.
std::pair<std::int64_t, std::int64_t> channel_layout(const Shape& s, const char* who) {
  MAGMADNN_CHECK(s.ndim() >= 2, ShapeError, who << ": images must be {N, C, ...}, got " << s);
  std::int64_t inner = 1;
  for (std::int64_t a = 2; a < s.ndim(); ++a) inner *= s[a];
  return {s[1], inner};
}
}  // namespace

template <typename T>
std::pair<std::vector<double>, std::vector<double>> channel_mean_std(const Tensor<T>& images) {
  const auto [channels, inner] = channel_layout(images.shape(), "channel_mean_std");
  const std::int64_t n = images.shape()[0];
  std::vector<T> staged;
  const T* x = host_readable(images.get_memory_type()) ? images.host_data() : (staged = images.to_vector()).data();
  std::vector<double> mean(channels, 0.0), sd(channels, 0.0);
  const double count = static_cast<double>(n * inner);
  for (std::int64_t c = 0; c < channels; ++c) {
    // Two passes: the one-pass formula loses precision on [0, 255] pixels.
    double s = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const T* p = x + (i * channels + c) * inner;
      for (std::int64_t k = 0; k < inner; ++k) s += static_cast<double>(p[k]);
    }
    mean[c] = s / count;
    double q = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const T* p = x + (i * channels + c) * inner;
      for (std::int64_t k = 0; k < inner; ++k) {
        const double d = static_cast<double>(p[k]) - mean[c];
        q += d * d;
      }
    }
    sd[c] = std::sqrt(q / count);
  }
  return {mean, sd};
}

template <typename T>
void normalize(Tensor<T>& images, const std::vector<double>& mean, const std::vector<double>& std) {
  const auto [channels, inner] = channel_layout(images.shape(), "normalize");
  // channels is copied in: Clang before 16 cannot capture a structured binding.
  auto fits = [&, channels = channels](const std::vector<double>& v) {
    return v.size() == 1 || std::int64_t(v.size()) == channels;
  };
  MAGMADNN_CHECK(fits(mean) && fits(std), ShapeError,
                 "normalize: images " << images.shape() << " have " << channels << " channels, but got "
                                      << mean.size() << " means and " << std.size() << " standard deviations");
  for (std::size_t c = 0; c < std.size(); ++c)
    MAGMADNN_CHECK(std[c] > 0, ValueError, "normalize: standard deviation " << c << " is " << std[c]);
  const bool in_place = host_readable(images.get_memory_type());
  std::vector<T> staged;
  T* x = in_place ? images.mutable_host_data() : (staged = images.to_vector()).data();
  const std::int64_t n = images.shape()[0];
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t c = 0; c < channels; ++c) {
      const double m = mean[mean.size() == 1 ? 0 : c], inv = 1.0 / std[std.size() == 1 ? 0 : c];
      T* p = x + (i * channels + c) * inner;
      for (std::int64_t k = 0; k < inner; ++k) p[k] = static_cast<T>((static_cast<double>(p[k]) - m) * inv);
    }
  if (!in_place) images.copy_from_host(staged.data(), images.size());
}

template <typename T>
Tensor<T> one_hot(const std::vector<std::int64_t>& labels, std::int64_t n_classes, memory_t mem) {
  MAGMADNN_CHECK(n_classes >= 1, ValueError, "one_hot: n_classes = " << n_classes);
  const auto n = static_cast<std::int64_t>(labels.size());
  Tensor<T> out({n, n_classes}, {ZERO, {}}, HOST);
  T* y = out.mutable_host_data();
  for (std::int64_t i = 0; i < n; ++i) {
    MAGMADNN_CHECK(labels[i] >= 0 && labels[i] < n_classes, ValueError,
                   "one_hot: label " << labels[i] << " at position " << i << " is outside [0, " << n_classes << ")");
    y[i * n_classes + labels[i]] = T(1);
  }
  return mem == HOST ? out : out.to(mem);
}

template <typename T>
Tensor<T> one_hot(const Tensor<T>& labels, std::int64_t n_classes, memory_t mem) {
  const Shape& s = labels.shape();
  MAGMADNN_CHECK(s.ndim() == 1 || (s.ndim() == 2 && s[1] == 1), ShapeError,
                 "one_hot: labels must be {N} or {N, 1}, got " << s);
  const std::vector<T> v = labels.to_vector();
  std::vector<std::int64_t> idx(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double d = static_cast<double>(v[i]);
    MAGMADNN_CHECK(d == std::floor(d) && d >= 0 && d < 9.0e15, ValueError,
                   "one_hot: label " << d << " at position " << i << " is not a class index");
    idx[i] = static_cast<std::int64_t>(d);
  }
  return one_hot<T>(idx, n_classes, mem);
}

template <typename T>
RandomCropWithPadding<T>::RandomCropWithPadding(std::int64_t pad, T fill) : pad_(pad), fill_(fill) {
  MAGMADNN_CHECK(pad >= 0, ValueError, "RandomCropWithPadding: pad = " << pad);
}

template <typename T>
void RandomCropWithPadding<T>::apply(T* x, const Shape& s, SampleRng& rng) const {
  MAGMADNN_CHECK(s.ndim() == 2 || s.ndim() == 3, ShapeError,
                 "RandomCropWithPadding: sample must be {C, H, W} or {H, W}, got " << s);
  const std::int64_t channels = s.ndim() == 3 ? s[0] : 1, h = s[-2], w = s[-1];
  const auto span = static_cast<std::uint64_t>(2 * pad_ + 1);
  // Offset of the window in the padded image, minus the padding: the shift
  // of the source relative to the output.
  const std::int64_t dy = static_cast<std::int64_t>(rng.uniform_int(span)) - pad_;
  const std::int64_t dx = static_cast<std::int64_t>(rng.uniform_int(span)) - pad_;
  if (dy == 0 && dx == 0) return;
  std::vector<T> plane(static_cast<std::size_t>(h * w));
  for (std::int64_t c = 0; c < channels; ++c) {
    T* p = x + c * h * w;
    std::copy(p, p + h * w, plane.begin());
    for (std::int64_t i = 0; i < h; ++i) {
      const std::int64_t si = i + dy;
      for (std::int64_t j = 0; j < w; ++j) {
        const std::int64_t sj = j + dx;
        p[i * w + j] = (si >= 0 && si < h && sj >= 0 && sj < w) ? plane[si * w + sj] : fill_;
      }
    }
  }
}

template <typename T>
HorizontalFlip<T>::HorizontalFlip(double p) : p_(p) {
  MAGMADNN_CHECK(p >= 0 && p <= 1, ValueError, "HorizontalFlip: probability " << p << " is outside [0, 1]");
}

template <typename T>
void HorizontalFlip<T>::apply(T* x, const Shape& s, SampleRng& rng) const {
  MAGMADNN_CHECK(s.ndim() >= 1, ShapeError, "HorizontalFlip: sample has no axis");
  if (!rng.bernoulli(p_)) return;
  const std::int64_t w = s[-1], rows = s.numel() / std::max<std::int64_t>(w, 1);
  for (std::int64_t r = 0; r < rows; ++r) std::reverse(x + r * w, x + (r + 1) * w);
}

#define MAGMADNN_TRANSFORMS_INSTANTIATE(T)                                                                   \
  template std::pair<std::vector<double>, std::vector<double>> channel_mean_std<T>(const Tensor<T>&);         \
  template void normalize<T>(Tensor<T>&, const std::vector<double>&, const std::vector<double>&);            \
  template Tensor<T> one_hot<T>(const Tensor<T>&, std::int64_t, memory_t);                                   \
  template Tensor<T> one_hot<T>(const std::vector<std::int64_t>&, std::int64_t, memory_t);                   \
  template class RandomCropWithPadding<T>;                                                                   \
  template class HorizontalFlip<T>;
MAGMADNN_TRANSFORMS_INSTANTIATE(float)
MAGMADNN_TRANSFORMS_INSTANTIATE(double)
#undef MAGMADNN_TRANSFORMS_INSTANTIATE

}  // namespace magmadnn::data
