#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <numeric>
#include <set>
#include <thread>

#include "magmadnn/backend/registry.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/core/random.h"
#include "magmadnn/data/dataloader.h"
#include "magmadnn/data/mnist.h"
#include "temp_dir.h"

using namespace magmadnn;
using data::Batch;
using data::DataLoader;
using data::LoaderOptions;

namespace {

// x[i] = {i, -i}, y[i] = i: a sample identifies itself.
struct Toy {
  Tensor<float> x, y;
  explicit Toy(std::int64_t n) {
    std::vector<float> xv, yv;
    for (std::int64_t i = 0; i < n; ++i) {
      xv.push_back(float(i));
      xv.push_back(-float(i));
      yv.push_back(float(i));
    }
    x = Tensor<float>::from_vector({n, 2}, xv, HOST);
    y = Tensor<float>::from_vector({n}, yv, HOST);
  }
};

LoaderOptions opts(std::int64_t bs, int workers, std::uint64_t seed = 42) {
  LoaderOptions o;
  o.batch_size = bs;
  o.workers = workers;
  o.seed = seed;
  return o;
}

// Every batch of the rest of the current epoch, as host vectors.
std::vector<std::pair<std::vector<float>, std::vector<float>>> drain(DataLoader<float>& l) {
  std::vector<std::pair<std::vector<float>, std::vector<float>>> out;
  Batch<float> b;
  while (l.next(b)) out.emplace_back(b.x.to_vector(), b.y.to_vector());
  return out;
}

// {N, 1, 6, 6} images with an asymmetric pattern, so flips and crops show.
Tensor<float> images(std::int64_t n) {
  std::vector<float> v;
  for (std::int64_t i = 0; i < n; ++i)
    for (int k = 0; k < 36; ++k) v.push_back(float(i * 100 + k + 1));
  return Tensor<float>::from_vector({n, 1, 6, 6}, v, HOST);
}

std::vector<std::shared_ptr<const data::Transform<float>>> flip_and_crop() {
  return {std::make_shared<data::HorizontalFlip<float>>(0.5), std::make_shared<data::RandomCropWithPadding<float>>(1)};
}

}  // namespace

TEST(DataLoader, EverySampleOncePerEpochWithPartialLastBatch) {
  Toy d(103);
  for (const int workers : {0, 1, 3}) {
    DataLoader<float> l(d.x, d.y, opts(10, workers));
    EXPECT_EQ(l.size(), 103);
    EXPECT_EQ(l.num_batches(), 11);
    for (int epoch = 0; epoch < 2; ++epoch) {
      l.start_epoch(epoch);
      std::multiset<int> seen;
      Batch<float> b;
      std::int64_t count = 0;
      while (l.next(b)) {
        EXPECT_EQ(b.index, count);
        EXPECT_EQ(b.size, count < 10 ? 10 : 3);
        EXPECT_EQ(b.x.shape(), Shape({b.size, 2}));
        EXPECT_EQ(b.y.shape(), Shape({b.size}));
        for (std::int64_t i = 0; i < b.size; ++i) {
          const float id = b.y.get(i);
          EXPECT_EQ(b.x.get({i, 0}), id);  // x and y rows stay together
          EXPECT_EQ(b.x.get({i, 1}), -id);
          seen.insert(int(id));
        }
        ++count;
      }
      EXPECT_EQ(count, 11);
      EXPECT_EQ(seen.size(), 103u);
      EXPECT_EQ(std::set<int>(seen.begin(), seen.end()).size(), 103u) << "workers " << workers;
      EXPECT_FALSE(l.next(b));  // stays at the end
    }
  }
}

TEST(DataLoader, DropLast) {
  Toy d(103);
  LoaderOptions o = opts(10, 2);
  o.drop_last = true;
  DataLoader<float> l(d.x, d.y, o);
  EXPECT_EQ(l.num_batches(), 10);
  const auto batches = drain(l);
  ASSERT_EQ(batches.size(), 10u);
  std::set<float> ids;
  for (const auto& [x, y] : batches) {
    EXPECT_EQ(y.size(), 10u);
    ids.insert(y.begin(), y.end());
  }
  EXPECT_EQ(ids.size(), 100u);
}

TEST(DataLoader, OrderDependsOnlyOnSeedAndEpoch) {
  Toy d(500);
  DataLoader<float> a(d.x, d.y, opts(64, 0, 7)), b(d.x, d.y, opts(64, 2, 7)), c(d.x, d.y, opts(64, 1, 8));
  EXPECT_EQ(a.epoch_order(0), b.epoch_order(0));
  EXPECT_NE(a.epoch_order(0), a.epoch_order(1));
  EXPECT_NE(a.epoch_order(0), c.epoch_order(0));
  std::vector<std::int64_t> identity(500);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(a.epoch_order(0), identity);
  LoaderOptions o = opts(64, 1);
  o.shuffle = false;
  DataLoader<float> plain(d.x, d.y, o);
  EXPECT_EQ(plain.epoch_order(3), identity);
  // The order a loader serves is the one epoch_order reports.
  a.start_epoch(1);
  std::vector<float> served;
  for (const auto& [x, y] : drain(a)) served.insert(served.end(), y.begin(), y.end());
  const auto order = a.epoch_order(1);
  ASSERT_EQ(served.size(), order.size());
  for (std::size_t i = 0; i < order.size(); ++i) ASSERT_EQ(served[i], float(order[i]));
  // Seed 0 derives one from the global seed: a seeded program repeats.
  set_seed(5);
  DataLoader<float> g1(d.x, d.y, opts(64, 0, 0));
  set_seed(5);
  DataLoader<float> g2(d.x, d.y, opts(64, 0, 0));
  DataLoader<float> g3(d.x, d.y, opts(64, 0, 0));
  EXPECT_EQ(g1.seed(), g2.seed());
  EXPECT_NE(g2.seed(), g3.seed());
  EXPECT_NE(g1.seed(), 0u);
}

TEST(DataLoader, WorkersGiveTheSameBatchesAsSynchronous) {
  const Tensor<float> x = images(77);
  Toy ids(77);
  for (int epoch = 0; epoch < 3; ++epoch) {
    DataLoader<float> sync(x, ids.y, opts(8, 0, 99), flip_and_crop());
    DataLoader<float> threaded(x, ids.y, [] {
      LoaderOptions o = opts(8, 2, 99);
      o.prefetch = 5;
      return o;
    }(), flip_and_crop());
    sync.start_epoch(epoch);
    threaded.start_epoch(epoch);
    const auto a = drain(sync), b = drain(threaded);
    ASSERT_EQ(a.size(), 10u);
    EXPECT_EQ(a, b) << "epoch " << epoch;
  }
}

TEST(DataLoader, ResumeFromCursorIsExact) {
  const Tensor<float> x = images(90);
  Toy ids(90);
  DataLoader<float> first(x, ids.y, opts(7, 2, 0), flip_and_crop());  // seed from the global generator
  first.start_epoch(4);
  Batch<float> b;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(first.next(b));
  const auto c = first.cursor();
  EXPECT_EQ(c.epoch, 4);
  EXPECT_EQ(c.batch, 5);
  EXPECT_EQ(c.seed, first.seed());
  const auto rest = drain(first);
  EXPECT_EQ(rest.size(), 13u - 5u);
  EXPECT_EQ(first.cursor().batch, 13);

  // A new loader (another process after a checkpoint), other thread count.
  LoaderOptions o = opts(7, 0, c.seed);
  DataLoader<float> resumed(x, ids.y, o, flip_and_crop());
  resumed.start_epoch(c.epoch, c.batch);
  EXPECT_EQ(drain(resumed), rest);
  // Restarting mid-epoch on the same loader drops prepared batches.
  first.start_epoch(c.epoch, c.batch);
  EXPECT_EQ(drain(first), rest);
  EXPECT_THROW(first.start_epoch(0, 14), ValueError);
}

TEST(DataLoader, AugmentationStatistics) {
  // One row per sample: [1 .. 6]; flipped rows start with 6.
  const std::int64_t n = 4000;
  std::vector<float> v;
  for (std::int64_t i = 0; i < n; ++i)
    for (int k = 0; k < 6; ++k) v.push_back(float(k + 1));
  const Tensor<float> x = Tensor<float>::from_vector({n, 1, 1, 6}, v, HOST);
  Toy ids(n);
  DataLoader<float> l(x, ids.y, opts(128, 2, 3), {std::make_shared<data::HorizontalFlip<float>>(0.5)});
  std::int64_t flipped = 0, total = 0;
  Batch<float> b;
  while (l.next(b)) {
    for (std::int64_t i = 0; i < b.size; ++i) flipped += b.x.get({i, 0, 0, 0}) == 6.0f;
    total += b.size;
  }
  EXPECT_EQ(total, n);
  EXPECT_NEAR(double(flipped) / double(n), 0.5, 0.035);  // ~4.4 sigma
  // Crop keeps the shape and the samples differ between epochs.
  const Tensor<float> imgs = images(16);
  Toy ids16(16);
  LoaderOptions o = opts(16, 1, 3);
  o.shuffle = false;
  DataLoader<float> c(imgs, ids16.y, o, {std::make_shared<data::RandomCropWithPadding<float>>(2)});
  c.start_epoch(0);
  ASSERT_TRUE(c.next(b));
  EXPECT_EQ(b.x.shape(), Shape({16, 1, 6, 6}));
  const auto e0 = b.x.to_vector();
  c.start_epoch(1);
  ASSERT_TRUE(c.next(b));
  EXPECT_NE(e0, b.x.to_vector());
  EXPECT_NE(e0, imgs.to_vector());
}

namespace {
class SlowTransform : public data::Transform<float> {
 public:
  void apply(float*, const Shape&, data::SampleRng&) const override {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
};
class FailAt : public data::Transform<float> {
 public:
  explicit FailAt(float id) : id_(id) {}
  void apply(float* x, const Shape&, data::SampleRng&) const override {
    MAGMADNN_CHECK(x[0] != id_, ValueError, "transform refused sample " << x[0]);
  }

 private:
  float id_;
};
}  // namespace

TEST(DataLoader, DestructorMidEpochJoinsPromptly) {
  Toy d(2000);
  const auto t0 = std::chrono::steady_clock::now();
  {
    LoaderOptions o = opts(16, 3);
    o.prefetch = 6;
    DataLoader<float> l(d.x, d.y, o, {std::make_shared<SlowTransform>()});
    Batch<float> b;
    ASSERT_TRUE(l.next(b));
    ASSERT_TRUE(l.next(b));
  }
  {
    DataLoader<float> never_used(d.x, d.y, opts(16, 4));
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // An epoch would take 2000 * 2 ms / 3 threads > 1.3 s; stopping takes one batch (~32 ms).
  EXPECT_LT(secs, 1.0);
}

TEST(DataLoader, ExceptionInTransformSurfacesInNext) {
  Toy d(50);
  for (const int workers : {0, 2}) {
    LoaderOptions o = opts(10, workers);
    o.shuffle = false;
    DataLoader<float> l(d.x, d.y, o, {std::make_shared<FailAt>(37.0f)});
    Batch<float> b;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(l.next(b));
    EXPECT_THROW_WITH(l.next(b), ValueError, "transform refused sample 37");
    EXPECT_EQ(l.cursor().batch, 4);  // the failing batch is skipped
    ASSERT_TRUE(l.next(b));
    EXPECT_EQ(b.index, 4);
    EXPECT_EQ(b.y.get(0), 40.0f);
    EXPECT_FALSE(l.next(b));
  }
}

TEST(DataLoader, ArgumentErrorsAndMemory) {
  Toy d(10), e(11);
  EXPECT_THROW_WITH(DataLoader<float>(d.x, e.y, opts(4, 0)), ShapeError, "{10, 2}", "{11}");
  EXPECT_THROW(DataLoader<float>(d.x, d.y, opts(0, 0)), ValueError);
  EXPECT_THROW(DataLoader<float>(d.x, d.y, opts(4, -1)), ValueError);
  LoaderOptions managed = opts(4, 1);
  managed.memory = MANAGED;
  DataLoader<float> m(d.x, d.y, managed), h(d.x, d.y, opts(4, 0));
  Batch<float> bm, bh;
  while (h.next(bh)) {
    ASSERT_TRUE(m.next(bm));
    EXPECT_EQ(bm.x.get_memory_type(), MANAGED);
    EXPECT_EQ(bm.x.to_vector(), bh.x.to_vector());
    EXPECT_EQ(bm.y.to_vector(), bh.y.to_vector());
  }
  LoaderOptions dev = opts(4, 1);
  dev.memory = DEVICE;
  if (!has_cuda_device()) {
    EXPECT_THROW(DataLoader<float>(d.x, d.y, dev), DeviceError);
  } else {
    DataLoader<float> g(d.x, d.y, dev), ref(d.x, d.y, opts(4, 0));
    Batch<float> bg;
    while (ref.next(bh)) {
      ASSERT_TRUE(g.next(bg));
      EXPECT_EQ(bg.x.get_memory_type(), DEVICE);
      EXPECT_EQ(bg.x.to_vector(), bh.x.to_vector());
    }
  }
  // The loader holds the data set's storage: the caller's tensors may go.
  auto owned = std::make_unique<Toy>(12);
  DataLoader<float> keeps(owned->x, owned->y, opts(5, 1));
  owned.reset();
  EXPECT_EQ(drain(keeps).size(), 3u);
}

TEST(DataLoader, FashionMnistEpochTiming) {
  namespace fs = std::filesystem;
  if (!fs::exists(std::string(data::kFashionMnistDir) + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)";
  const auto train = data::load_fashion_mnist<float>(data::Train);
  using clock = std::chrono::steady_clock;
  // Best of three epochs (the machine may be shared); `step_us` of busy work
  // per batch stands in for the training step that the workers overlap.
  auto epoch_ms = [&](int workers, double step_us, bool augment) {
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      DataLoader<float> l(train.images, train.labels, opts(100, workers, 1),
                          augment ? flip_and_crop() : std::vector<std::shared_ptr<const data::Transform<float>>>{});
      Batch<float> b;
      std::int64_t seen = 0;
      const auto t0 = clock::now();
      while (l.next(b)) {
        seen += b.size;
        const auto until = clock::now() + std::chrono::duration<double, std::micro>(step_us);
        while (clock::now() < until) {
        }
      }
      EXPECT_EQ(seen, 60000);
      best = std::min(best, std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    }
    return best;
  };
  for (const bool augment : {false, true})
    for (const double step : {0.0, 200.0})
      std::cout << "[ info ] Fashion-MNIST epoch, 600 batches of 100" << (augment ? ", flip + crop(1)" : "")
                << ", step " << step << " us: workers=0 " << epoch_ms(0, step, augment) << " ms, workers=1 "
                << epoch_ms(1, step, augment) << " ms, workers=2 " << epoch_ms(2, step, augment) << " ms\n";
}
