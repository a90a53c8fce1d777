#include "magmadnn/data/holdout.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "magmadnn/core/errors.h"
#include "magmadnn/data/sample_rng.h"

namespace magmadnn::data {
namespace {

// A stream of its own, so that the split does not move when other users of
// the seed (weights, shuffles, dropout) draw more or fewer numbers.
constexpr std::uint64_t kHoldoutStream = 0x686f6c646f7574ULL;  // "holdout"

// The first `k` of a seeded Fisher-Yates shuffle of `pool`, moved to its front.
void pick(std::vector<std::int64_t>& pool, std::size_t k, SampleRng& rng) {
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t j = i + static_cast<std::size_t>(rng.uniform_int(pool.size() - i));
    std::swap(pool[i], pool[j]);
  }
}

}  // namespace

Holdout holdout_split(std::int64_t n, double fraction, std::uint64_t seed, const std::vector<std::int64_t>* labels) {
  MAGMADNN_CHECK(std::isfinite(fraction) && fraction >= 0.0 && fraction < 1.0, ValueError,
                 "validation fraction must be in [0, 1), got " << fraction);
  MAGMADNN_CHECK(n >= 0, ValueError, "holdout_split: negative sample count " << n);
  MAGMADNN_CHECK(!labels || static_cast<std::int64_t>(labels->size()) == n, ValueError,
                 "holdout_split: " << labels->size() << " labels for " << n << " samples");
  Holdout h;
  if (fraction == 0.0) {
    h.train.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) h.train[static_cast<std::size_t>(i)] = i;
    return h;
  }
  MAGMADNN_CHECK(n >= 2, ValueError,
                 "holding out a validation fraction of " << fraction << " needs at least 2 training samples, got "
                                                         << n);
  // Groups: one per class, or one for everything.
  std::map<std::int64_t, std::vector<std::int64_t>> groups;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t c = labels ? (*labels)[static_cast<std::size_t>(i)] : 0;
    MAGMADNN_CHECK(c >= 0, ValueError, "holdout_split: label " << c << " of sample " << i << " is negative");
    groups[c].push_back(i);
  }
  SampleRng rng(seed, kHoldoutStream);
  std::vector<char> held(static_cast<std::size_t>(n), 0);
  std::int64_t total = 0;
  for (auto& [cls, members] : groups) {
    const auto k = static_cast<std::size_t>(std::llround(fraction * static_cast<double>(members.size())));
    pick(members, std::min(k, members.size()), rng);
    for (std::size_t i = 0; i < std::min(k, members.size()); ++i) held[static_cast<std::size_t>(members[i])] = 1;
    total += static_cast<std::int64_t>(std::min(k, members.size()));
  }
  // Rounding per class can leave nothing held out (many small classes) or
  // everything (n tiny): fix both ends with single seeded moves.
  if (total == 0) {
    held[static_cast<std::size_t>(rng.uniform_int(static_cast<std::uint64_t>(n)))] = 1;
  } else if (total == n) {
    held[static_cast<std::size_t>(rng.uniform_int(static_cast<std::uint64_t>(n)))] = 0;
  }
  for (std::int64_t i = 0; i < n; ++i) (held[static_cast<std::size_t>(i)] ? h.validation : h.train).push_back(i);
  return h;
}

template <typename T>
Tensor<T> take_rows(const Tensor<T>& x, const std::vector<std::int64_t>& rows) {
  const Shape& s = x.shape();
  MAGMADNN_CHECK(s.ndim() >= 1, ShapeError, "take_rows: a scalar has no rows");
  std::vector<std::int64_t> dims = s.dims();
  const std::int64_t n = dims[0];
  const std::int64_t row = n > 0 ? x.size() / n : 0;
  dims[0] = static_cast<std::int64_t>(rows.size());
  Tensor<T> out(Shape(dims), HOST);
  const memory_t m = x.get_memory_type();
  std::vector<T> staged;  // only for device memory
  const T* src = (m == HOST || m == MANAGED || m == CUDA_MANAGED) ? x.host_data() : (staged = x.to_vector()).data();
  T* dst = out.mutable_host_data();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    MAGMADNN_CHECK(rows[i] >= 0 && rows[i] < n, IndexError,
                   "take_rows: row " << rows[i] << " outside [0, " << n << ") of " << s);
    std::memcpy(dst + static_cast<std::int64_t>(i) * row, src + rows[i] * row, sizeof(T) * row);
  }
  return out;
}

template Tensor<float> take_rows(const Tensor<float>&, const std::vector<std::int64_t>&);
template Tensor<double> take_rows(const Tensor<double>&, const std::vector<std::int64_t>&);

}  // namespace magmadnn::data
