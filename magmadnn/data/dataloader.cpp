#include "magmadnn/data/dataloader.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>

#include "magmadnn/core/errors.h"
#include "magmadnn/core/random.h"
#include "magmadnn/data/sample_rng.h"

namespace magmadnn::data {

namespace {

constexpr std::int64_t kMaxSamples = std::int64_t(1) << 40;
constexpr std::int64_t kMaxEpoch = std::int64_t(1) << 23;

// Philox stream numbers: the shuffle of an epoch uses the epoch itself (top
// bit clear); a sample's augmentation uses top bit | epoch | sample, so the
// two families never meet.
std::uint64_t shuffle_stream(std::int64_t epoch) { return static_cast<std::uint64_t>(epoch); }
std::uint64_t augment_stream(std::int64_t epoch, std::int64_t sample) {
  return (std::uint64_t(1) << 63) | (static_cast<std::uint64_t>(epoch) << 40) | static_cast<std::uint64_t>(sample);
}

std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Shape with_rows(const Shape& s, std::int64_t rows) {
  std::vector<std::int64_t> d = s.dims();
  d[0] = rows;
  return Shape(d);
}

}  // namespace

template <typename T>
struct DataLoader<T>::Impl {
  // What a worker leaves for next(): a batch, or the reason there is none.
  struct Slot {
    Batch<T> batch;
    std::exception_ptr error;
  };

  Samples<T> x;  // shared storage, no copy
  Tensor<T> y;   // a view

  const T* yh = nullptr;
  std::int64_t n = 0, x_row = 0, y_row = 0;
  Shape x_sample;
  LoaderOptions opts;
  std::uint64_t seed = 0;
  std::vector<std::shared_ptr<const Transform<T>>> augment;
  std::int64_t batches = 0;

  mutable std::mutex mu;
  std::condition_variable work_cv, ready_cv;
  bool stop = false, started = false;
  std::uint64_t generation = 0;  // bumped by start_epoch: stale work is dropped
  std::int64_t epoch = 0, next_deliver = 0, next_assign = 0;
  std::shared_ptr<const std::vector<std::int64_t>> order;
  std::map<std::int64_t, Slot> ready;
  std::vector<std::thread> threads;

  std::vector<std::int64_t> make_order(std::int64_t ep) const {
    std::vector<std::int64_t> o(static_cast<std::size_t>(n));
    std::iota(o.begin(), o.end(), std::int64_t(0));
    if (!opts.shuffle) return o;
    SampleRng rng(seed, shuffle_stream(ep));
    for (std::int64_t i = n - 1; i > 0; --i)
      std::swap(o[i], o[static_cast<std::int64_t>(rng.uniform_int(static_cast<std::uint64_t>(i + 1)))]);
    return o;
  }

  Batch<T> build(std::int64_t b, std::int64_t ep, const std::vector<std::int64_t>& ord) const {
    const std::int64_t begin = b * opts.batch_size;
    const std::int64_t m = std::min(opts.batch_size, n - begin);
    // MANAGED batches are written on the host side and then pushed towards
    // the GPU; other GPU memory is filled from a host staging batch.
    const memory_t stage = opts.memory == MANAGED ? MANAGED : HOST;
    Tensor<T> bx(with_rows(x.shape(), m), stage), by(with_rows(y.shape(), m), stage);
    T* px = bx.mutable_host_data();
    T* py = by.mutable_host_data();
    // One generator per sample, from (seed, epoch, sample): a source that
    // computes its rows (an image folder's random crops) draws first, the
    // augmentations go on from there.
    std::vector<SampleRng> rngs;
    const bool random_rows = x.source() != nullptr;
    if (random_rows || !augment.empty()) {
      rngs.reserve(static_cast<std::size_t>(m));
      for (std::int64_t i = 0; i < m; ++i) rngs.emplace_back(seed, augment_stream(ep, ord[begin + i]));
    }
    x.gather(ord.data(), begin, m, px, random_rows ? rngs.data() : nullptr);  // promoted from the data set's type here
    for (std::int64_t i = 0; i < m; ++i) {
      const std::int64_t s = ord[begin + i];
      std::memcpy(py + i * y_row, yh + s * y_row, sizeof(T) * y_row);
      for (const auto& t : augment) t->apply(px + i * x_row, x_sample, rngs[static_cast<std::size_t>(i)]);
    }
    Batch<T> out;
    out.index = b;
    out.size = m;
    if (opts.memory == HOST || opts.memory == MANAGED) {
      if (opts.memory == MANAGED) {
        bx.prefetch(false);
        by.prefetch(false);
      }
      out.x = std::move(bx);
      out.y = std::move(by);
    } else {
      out.x = bx.to(opts.memory);
      out.y = by.to(opts.memory);
    }
    return out;
  }

  void begin_epoch_locked(std::int64_t ep, std::int64_t first, std::shared_ptr<const std::vector<std::int64_t>> o) {
    ++generation;
    ready.clear();
    epoch = ep;
    order = std::move(o);
    next_deliver = next_assign = first;
    started = true;
    work_cv.notify_all();
  }

  std::int64_t window() const { return std::max<std::int64_t>({opts.prefetch, opts.workers, 1}); }

  void worker_loop() {
    std::unique_lock lk(mu);
    for (;;) {
      work_cv.wait(lk, [&] {
        return stop || (started && next_assign < batches && next_assign < next_deliver + window());
      });
      if (stop) return;
      const std::int64_t b = next_assign++;
      const std::uint64_t gen = generation;
      const std::int64_t ep = epoch;
      const auto ord = order;
      lk.unlock();
      Slot slot;
      try {
        slot.batch = build(b, ep, *ord);
      } catch (...) {
        slot.error = std::current_exception();
      }
      lk.lock();
      if (gen == generation) {
        ready.emplace(b, std::move(slot));
        ready_cv.notify_all();
      }
    }
  }
};

template <typename T>
DataLoader<T>::DataLoader(const Samples<T>& x, const Tensor<T>& y, LoaderOptions opts,
                          std::vector<std::shared_ptr<const Transform<T>>> augment)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  MAGMADNN_CHECK(x.ndim() >= 1 && y.ndim() >= 1 && x.shape()[0] == y.shape()[0], ShapeError,
                 "DataLoader: x " << x.shape() << " and y " << y.shape() << " must have the same first axis");
  MAGMADNN_CHECK(opts.batch_size >= 1, ValueError, "DataLoader: batch_size = " << opts.batch_size);
  MAGMADNN_CHECK(opts.workers >= 0 && opts.prefetch >= 0, ValueError,
                 "DataLoader: workers = " << opts.workers << ", prefetch = " << opts.prefetch);
  for (const auto& [memory, shape] : {std::pair{x.get_memory_type(), x.shape()}, {y.get_memory_type(), y.shape()}})
    MAGMADNN_CHECK(memory != DEVICE, NotSupportedError,
                   "DataLoader: the data set must be readable on the host (HOST, MANAGED or CUDA_MANAGED), "
                   "got DEVICE "
                       << shape << "; keep it on the host and set LoaderOptions::memory = DEVICE");
  for (const auto& t : augment) MAGMADNN_CHECK(t != nullptr, ValueError, "DataLoader: null transform");
  s.n = x.shape()[0];
  MAGMADNN_CHECK(s.n < kMaxSamples, ValueError, "DataLoader: " << s.n << " samples exceed 2^40");
  if (opts.memory != HOST && opts.memory != MANAGED) Tensor<T> probe({1}, opts.memory);  // DeviceError now, not later
  s.x = x;
  s.y = y.view(y.shape());
  s.yh = s.n ? s.y.host_data() : nullptr;
  s.x_row = s.n ? x.size() / s.n : 0;
  s.y_row = s.n ? y.size() / s.n : 0;
  std::vector<std::int64_t> sample(x.shape().dims().begin() + 1, x.shape().dims().end());
  s.x_sample = Shape(sample);
  s.opts = opts;
  s.seed = opts.seed ? opts.seed : (splitmix64(get_seed() ^ splitmix64(next_random_stream())) | 1);
  s.augment = std::move(augment);
  s.batches = opts.drop_last ? s.n / opts.batch_size : (s.n + opts.batch_size - 1) / opts.batch_size;
  s.threads.reserve(static_cast<std::size_t>(opts.workers));
  for (int i = 0; i < opts.workers; ++i) s.threads.emplace_back([&s] { s.worker_loop(); });
}

template <typename T>
DataLoader<T>::~DataLoader() {
  {
    std::lock_guard lk(impl_->mu);
    impl_->stop = true;
  }
  impl_->work_cv.notify_all();
  for (auto& t : impl_->threads) t.join();
}

template <typename T>
std::int64_t DataLoader<T>::size() const { return impl_->n; }
template <typename T>
std::int64_t DataLoader<T>::num_batches() const { return impl_->batches; }
template <typename T>
std::uint64_t DataLoader<T>::seed() const { return impl_->seed; }
template <typename T>
const LoaderOptions& DataLoader<T>::options() const { return impl_->opts; }

template <typename T>
std::vector<std::int64_t> DataLoader<T>::epoch_order(std::int64_t epoch) const {
  MAGMADNN_CHECK(epoch >= 0 && epoch < kMaxEpoch, ValueError, "DataLoader: epoch " << epoch << " outside [0, 2^23)");
  return impl_->make_order(epoch);
}

template <typename T>
void DataLoader<T>::start_epoch(std::int64_t epoch, std::int64_t first_batch) {
  Impl& s = *impl_;
  MAGMADNN_CHECK(epoch >= 0 && epoch < kMaxEpoch, ValueError, "DataLoader: epoch " << epoch << " outside [0, 2^23)");
  MAGMADNN_CHECK(first_batch >= 0 && first_batch <= s.batches, ValueError,
                 "DataLoader: first batch " << first_batch << " outside [0, " << s.batches << "]");
  auto order = std::make_shared<const std::vector<std::int64_t>>(s.make_order(epoch));
  std::lock_guard lk(s.mu);
  s.begin_epoch_locked(epoch, first_batch, std::move(order));
}

template <typename T>
bool DataLoader<T>::next(Batch<T>& out) {
  Impl& s = *impl_;
  if (!s.started) start_epoch(0);
  if (s.threads.empty()) {
    if (s.next_deliver >= s.batches) return false;
    const std::int64_t b = s.next_deliver++;  // a failing batch is skipped, as with workers
    out = s.build(b, s.epoch, *s.order);
    return true;
  }
  std::unique_lock lk(s.mu);
  if (s.next_deliver >= s.batches) return false;
  s.ready_cv.wait(lk, [&] { return s.ready.count(s.next_deliver) != 0; });
  auto node = s.ready.extract(s.next_deliver);
  ++s.next_deliver;
  s.work_cv.notify_all();
  lk.unlock();
  if (node.mapped().error) std::rethrow_exception(node.mapped().error);
  out = std::move(node.mapped().batch);
  return true;
}

template <typename T>
typename DataLoader<T>::Cursor DataLoader<T>::cursor() const {
  std::lock_guard lk(impl_->mu);
  return Cursor{impl_->epoch, impl_->started ? impl_->next_deliver : 0, impl_->seed};
}

template class DataLoader<float>;
template class DataLoader<double>;

}  // namespace magmadnn::data
