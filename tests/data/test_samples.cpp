// Data kept at source precision (data::Samples): uint8 images promoted per
// batch give the same bytes as the images converted to float when read,
// which is what the readers did before (io::IdxArray::convert).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "magmadnn/core/errors.h"
#include "magmadnn/data/dataloader.h"
#include "magmadnn/data/holdout.h"
#include "magmadnn/data/mnist.h"
#include "magmadnn/data/samples.h"
#include "magmadnn/io/byte_reader.h"
#include "magmadnn/io/idx.h"
#include "temp_dir.h"

using namespace magmadnn;
using magmadnn::test::TempDir;

namespace {

// n random images of 28x28 and their labels, as MNIST-format files.
void write_random_mnist(const TempDir& dir, const std::string& split, std::int64_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<double> px(static_cast<std::size_t>(n * 28 * 28)), lab(static_cast<std::size_t>(n));
  for (auto& p : px) p = double(gen() % 256);
  for (auto& l : lab) l = double(gen() % 10);
  io::write_idx(dir.file(split + "-images-idx3-ubyte"), io::IdxType::u8, {n, 28, 28}, px, false);
  io::write_idx(dir.file(split + "-labels-idx1-ubyte"), io::IdxType::u8, {n}, lab, false);
}

// The images as the readers made them before Samples: every pixel converted
// once at load time by io::IdxArray::convert.
template <typename T>
Tensor<T> converted_at_load(const std::string& images_path, data::PixelScale pixels) {
  const io::IdxArray a = io::read_idx(images_path);
  Tensor<T> t({a.shape[0], 1, a.shape[1], a.shape[2]}, HOST);
  const data::ByteScale s = data::detail::pixel_affine(pixels);
  a.convert(t.mutable_host_data(), s.scale, s.shift);
  return t;
}

template <typename T>
bool same_bytes(const Tensor<T>& a, const Tensor<T>& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.host_data(), b.host_data(), sizeof(T) * static_cast<std::size_t>(a.size())) == 0;
}

// Loaders over `a` and `b` with the same options and seed serve batches of
// the same bytes, epoch after epoch (compared batch by batch: the whole
// Fashion-MNIST epoch would be 188 MB).
template <typename T>
void expect_same_batches(const data::Samples<T>& a, const data::Samples<T>& b, const Tensor<T>& y,
                         data::LoaderOptions o, int epochs,
                         const std::vector<std::shared_ptr<const data::Transform<T>>>& augment) {
  data::DataLoader<T> la(a, y, o, augment), lb(b, y, o, augment);
  for (int e = 0; e < epochs; ++e) {
    la.start_epoch(e);
    lb.start_epoch(e);
    data::Batch<T> ba, bb;
    std::int64_t batches = 0;
    while (la.next(ba)) {
      ASSERT_TRUE(lb.next(bb));
      ASSERT_TRUE(same_bytes(ba.x, bb.x)) << "epoch " << e << ", batch " << ba.index;
      ASSERT_TRUE(same_bytes(ba.y, bb.y));
      ++batches;
    }
    EXPECT_FALSE(lb.next(bb));
    EXPECT_EQ(batches, la.num_batches());
  }
}

template <typename T>
void expect_loader_batches_identical(const std::string& dir, data::PixelScale pixels) {
  const auto src = data::load_mnist_source<T>(dir, data::Train, {pixels, HOST});
  ASSERT_TRUE(src.images.is_bytes());
  EXPECT_STREQ(src.images.storage_type(), "uint8");
  const Tensor<T> old = converted_at_load<T>(io::find_plain_or_gz(dir + "/train-images-idx3-ubyte"), pixels);
  EXPECT_TRUE(same_bytes(src.images.to_tensor(), old));
  EXPECT_TRUE(same_bytes(data::load_mnist<T>(dir, data::Train, {pixels, HOST}).images, old));
  data::LoaderOptions o;
  o.batch_size = 100;
  o.seed = 1234;
  o.workers = 2;
  std::vector<std::shared_ptr<const data::Transform<T>>> augment = {
      std::make_shared<data::RandomCropWithPadding<T>>(2), std::make_shared<data::HorizontalFlip<T>>()};
  expect_same_batches<T>(src.images, old, src.labels, o, 2, {});
  expect_same_batches<T>(src.images, old, src.labels, o, 1, augment);
}

}  // namespace

TEST(Samples, BytesPromoteLikeTheReadersAndSliceTakeGather) {
  auto bytes = std::make_shared<const std::vector<std::uint8_t>>(std::vector<std::uint8_t>{0, 1, 2, 127, 128, 255});
  const auto s = data::Samples<float>::from_bytes({3, 2}, bytes, {1.0 / 255.0, 0.0});
  EXPECT_EQ(s.rows(), 3);
  EXPECT_EQ(s.row_size(), 2);
  EXPECT_EQ(s.storage_bytes(), 6u);
  EXPECT_EQ(s.get_memory_type(), HOST);
  const Tensor<float> t = s.to_tensor();
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(t.get(i), static_cast<float>(static_cast<double>((*bytes)[i]) * (1.0 / 255.0))) << i;
  const std::vector<std::int64_t> rows = {2, 0};
  float out[4];
  s.gather(rows.data(), 0, 2, out);
  EXPECT_EQ(out[0], t.get(4));
  EXPECT_EQ(out[3], t.get(1));
  const auto sl = s.slice(1, 3);
  EXPECT_EQ(sl.shape(), Shape({2, 2}));
  EXPECT_EQ(sl.to_tensor().get(0), t.get(2));
  const auto taken = s.take({2, 2, 1});
  EXPECT_TRUE(taken.is_bytes());
  EXPECT_EQ(taken.storage_bytes(), 6u);
  EXPECT_TRUE(same_bytes(taken.to_tensor(), data::take_rows(t, {2, 2, 1})));
  const std::vector<std::int64_t> bad = {3};
  EXPECT_THROW(s.gather(bad.data(), 0, 1, out), IndexError);
  EXPECT_THROW(s.slice(2, 4), IndexError);
  EXPECT_THROW(s.take({-1}), IndexError);
  EXPECT_THROW(s.tensor(), ValueError);
  EXPECT_THROW(data::Samples<float>::from_bytes({4, 2}, bytes, {}), ShapeError);
}

TEST(Samples, TensorStorageIsAViewAndKeepsWorking) {
  Tensor<double> t = Tensor<double>::from_vector({3, 2}, {1, 2, 3, 4, 5, 6});
  const data::Samples<double> s = t;  // implicit: every API taking Samples takes tensors
  EXPECT_FALSE(s.is_bytes());
  EXPECT_STREQ(s.storage_type(), "float64");
  EXPECT_EQ(s.storage_bytes(), 6 * sizeof(double));
  t.set(0, 10.0);  // shared storage
  EXPECT_EQ(s.to_tensor().get(0), 10.0);
  const data::Samples<double> copy = s;
  EXPECT_TRUE(copy.tensor().shares_storage_with(t));
  EXPECT_TRUE(same_bytes(s.take({2, 0}).tensor(), data::take_rows(t, {2, 0})));
}

TEST(Samples, LoaderBatchesOfUint8EqualTheFloatPathBitForBit) {
  TempDir dir;
  write_random_mnist(dir, "train", 1030, 7);  // a partial last batch
  for (const auto p : {data::PixelScale::Unit, data::PixelScale::V1, data::PixelScale::Raw}) {
    expect_loader_batches_identical<float>(dir.str(), p);
    expect_loader_batches_identical<double>(dir.str(), p);
  }
}

// The real Fashion-MNIST training set where it is installed: 47 MB held, not
// 188 MB, and the same batches.
TEST(Samples, FashionMnistTrainingSetIs47MBOfUint8AndServesTheSameBatches) {
  if (!std::filesystem::exists(data::kFashionMnistDir)) GTEST_SKIP() << "no " << data::kFashionMnistDir;
  const auto src = data::load_fashion_mnist_source<float>(data::Train);
  EXPECT_EQ(src.images.storage_bytes(), 60000u * 784u);  // 47,040,000 bytes
  EXPECT_EQ(src.images.to_tensor().size() * sizeof(float), 4u * 60000u * 784u);
  expect_loader_batches_identical<float>(data::kFashionMnistDir, data::PixelScale::Unit);
}

TEST(Samples, ShortAndCorruptFilesStillThrowIOError) {
  TempDir dir;
  write_random_mnist(dir, "train", 10, 3);
  const std::string images = dir.file("train-images-idx3-ubyte");
  std::filesystem::resize_file(images, 16 + 9 * 784 + 100);  // the tenth image cut short
  EXPECT_THROW(data::load_mnist_source<float>(dir.str(), data::Train), IOError);
  std::ofstream(images, std::ios::binary) << "not an idx file";
  EXPECT_THROW(data::load_mnist_source<float>(dir.str(), data::Train), IOError);
}

// Whichever way gather promotes (a table, or arithmetic in T checked against
// it), every byte becomes the readers' value: byte x scale + shift in
// double, rounded to T once.
template <typename T>
void expect_every_byte_as_the_readers(data::ByteScale scale) {
  auto all = std::make_shared<std::vector<std::uint8_t>>(256);
  for (int b = 0; b < 256; ++b) (*all)[b] = static_cast<std::uint8_t>(b);
  const auto s = data::Samples<T>::from_bytes({2, 128}, all, scale);
  std::vector<T> out(256);
  s.gather(nullptr, 0, 2, out.data());
  for (int b = 0; b < 256; ++b)
    ASSERT_EQ(out[b], static_cast<T>(static_cast<double>(b) * scale.scale + scale.shift))
        << "byte " << b << ", scale " << scale.scale << ", shift " << scale.shift;
}

TEST(Samples, EveryByteAtEveryScaleIsTheReadersValue) {
  for (const data::ByteScale s : {data::ByteScale{1.0 / 255.0, 0.0}, data::ByteScale{1.0 / 128.0, -1.0},
                                  data::ByteScale{1.0, 0.0}, data::ByteScale{0.3, 0.7},
                                  data::ByteScale{1.0 / 3.0, 0.1}, data::ByteScale{1.0 / 255.0, -0.5}}) {
    expect_every_byte_as_the_readers<float>(s);
    expect_every_byte_as_the_readers<double>(s);
  }
}

// Computed samples: gather calls the fill per row, by the sample's index
// through any slice and take; nothing is stored; a DataLoader reads them.
TEST(Samples, GeneratedRowsAreComputedByIndexThroughSliceAndTake) {
  auto fill = std::make_shared<const data::Samples<double>::RowFill>([](std::int64_t id, double* dst) {
    for (int k = 0; k < 3; ++k) dst[k] = static_cast<double>(10 * id + k);
  });
  const auto s = data::Samples<double>::generated({6, 3}, fill);
  EXPECT_TRUE(s.is_generated());
  EXPECT_FALSE(s.is_bytes());
  EXPECT_STREQ(s.storage_type(), "generated");
  EXPECT_EQ(s.storage_bytes(), 0u);
  EXPECT_EQ(s.get_memory_type(), HOST);
  EXPECT_THROW(s.tensor(), ValueError);
  const std::vector<std::int64_t> rows{4, 1};
  std::vector<double> out(6);
  s.gather(rows.data(), 0, 2, out.data());
  EXPECT_EQ(out, (std::vector<double>{40, 41, 42, 10, 11, 12}));
  const auto part = s.slice(2, 6).take({3, 0});  // samples 5 and 2
  EXPECT_EQ(part.rows(), 2);
  EXPECT_EQ(part.to_tensor().to_vector(), (std::vector<double>{50, 51, 52, 20, 21, 22}));
  EXPECT_EQ(part.slice(1, 2).to_tensor().to_vector(), (std::vector<double>{20, 21, 22}));
  EXPECT_EQ(part.storage_bytes(), 2 * sizeof(std::int64_t));
  EXPECT_THROW(s.take({6}), IndexError);
  EXPECT_THROW(s.gather(nullptr, 5, 2, out.data()), IndexError);
}
