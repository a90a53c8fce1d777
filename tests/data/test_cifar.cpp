#include <gtest/gtest.h>

#include "magmadnn/core/errors.h"
#include "magmadnn/data/cifar.h"
#include "magmadnn/io/cifar.h"
#include "temp_dir.h"

using namespace magmadnn;
using magmadnn::test::TempDir;

namespace {
io::CifarRecords make_records(std::int64_t n, int classes, std::uint8_t salt) {
  io::CifarRecords r;
  r.count = n;
  for (std::int64_t i = 0; i < n * io::kCifarPixels; ++i) r.pixels.push_back(static_cast<std::uint8_t>(i * 31 + salt));
  for (std::int64_t i = 0; i < n; ++i) {
    r.fine.push_back(static_cast<std::uint8_t>((i * 7 + salt) % classes));
    r.coarse.push_back(static_cast<std::uint8_t>((i * 3 + salt) % 20));
  }
  return r;
}
}  // namespace

TEST(Cifar, RoundTripBothFormatsPlainAndGzip) {
  TempDir dir;
  for (const bool gz : {false, true}) {
    const auto r10 = make_records(3, 10, 1);
    const std::string p10 = dir.file(gz ? "c10.bin.gz" : "c10.bin");
    io::CifarRecords w10 = r10;
    w10.coarse.clear();
    io::write_cifar_bin(p10, io::CifarKind::Cifar10, w10, gz);
    const auto b10 = io::read_cifar_bin(p10, io::CifarKind::Cifar10);
    EXPECT_EQ(b10.count, 3);
    EXPECT_EQ(b10.pixels, r10.pixels);
    EXPECT_EQ(b10.fine, r10.fine);
    EXPECT_TRUE(b10.coarse.empty());

    const auto r100 = make_records(4, 100, 5);
    const std::string p100 = dir.file(gz ? "c100.bin.gz" : "c100.bin");
    io::write_cifar_bin(p100, io::CifarKind::Cifar100, r100, gz);
    const auto b100 = io::read_cifar_bin(p100, io::CifarKind::Cifar100);
    EXPECT_EQ(b100.pixels, r100.pixels);
    EXPECT_EQ(b100.fine, r100.fine);
    EXPECT_EQ(b100.coarse, r100.coarse);
  }
}

TEST(Cifar, WrongRecordSizeNamesFileAndSizes) {
  TempDir dir;
  const std::string path = dir.file("c100.bin");
  io::write_cifar_bin(path, io::CifarKind::Cifar100, make_records(3, 100, 0));
  // 3 * 3074 = 9222 bytes is not a multiple of 3073.
  EXPECT_THROW_WITH(io::read_cifar_bin(path, io::CifarKind::Cifar10), IOError, path, "9222 bytes",
                    "CIFAR-10 records of 3073 bytes", "fits the other CIFAR format");
  std::vector<unsigned char> bytes = test::read_bytes(path);
  bytes.resize(bytes.size() - 100);  // a cut-off last record
  test::write_bytes(path, bytes);
  EXPECT_THROW_WITH(io::read_cifar_bin(path, io::CifarKind::Cifar100), IOError, path, "offset 6148",
                    "has 2974 bytes");
  test::write_bytes(path, {});
  EXPECT_THROW_WITH(io::read_cifar_bin(path, io::CifarKind::Cifar10), IOError, path, "0 bytes");
}

TEST(Cifar, LabelOutOfRange) {
  TempDir dir;
  const std::string path = dir.file("bad_label.bin");
  auto r = make_records(2, 10, 0);
  r.coarse.clear();
  r.fine[1] = 12;
  io::write_cifar_bin(path, io::CifarKind::Cifar10, r);
  EXPECT_THROW_WITH(io::read_cifar_bin(path, io::CifarKind::Cifar10), IOError, path, "record 1", "offset 3073",
                    "label 12");
}

TEST(Cifar, DatasetsAndV1Classes) {
  TempDir dir;
  for (int b = 1; b <= 5; ++b) {
    auto r = make_records(2, 10, static_cast<std::uint8_t>(b));
    r.coarse.clear();
    io::write_cifar_bin(dir.file("data_batch_" + std::to_string(b) + ".bin"), io::CifarKind::Cifar10, r, b % 2);
  }
  auto t = make_records(3, 10, 9);
  t.coarse.clear();
  io::write_cifar_bin(dir.file("test_batch.bin"), io::CifarKind::Cifar10, t);
  const auto train = data::load_cifar10<float>(dir.str(), data::Train);
  EXPECT_EQ(train.images.shape(), Shape({10, 3, 32, 32}));
  EXPECT_EQ(train.labels.shape(), Shape({10, 10}));
  // Record 2 is the first of batch 2: pixel 0 is salt 2 -> 2/255.
  EXPECT_FLOAT_EQ(train.images.get({2, 0, 0, 0}), 2.0f / 255.0f);
  EXPECT_EQ(train.labels.get({2, train.classes[2]}), 1.0f);

  data::CIFAR10<float> v1(dir.str(), data::Train, 3, {data::PixelScale::V1, HOST});
  EXPECT_EQ(v1.nimages(), 2u);
  EXPECT_EQ(v1.nchanels(), 3u);
  EXPECT_EQ(v1.nrows(), 32u);
  EXPECT_EQ(v1.nclasses(), 10u);
  EXPECT_FLOAT_EQ(v1.images().get(0), 3.0f / 128.0f - 1.0f);
  data::CIFAR10<float> v1test(dir.str(), data::Test);
  EXPECT_EQ(v1test.nimages(), 3u);
  EXPECT_THROW(data::CIFAR10<float>(dir.str(), data::Train, 6), ValueError);

  io::write_cifar_bin(dir.file("train.bin"), io::CifarKind::Cifar100, make_records(4, 100, 1));
  data::CIFAR100<double> c100(dir.str(), data::Train);
  EXPECT_EQ(c100.nclasses(), 100u);
  EXPECT_EQ(c100.nsuperclasses(), 20u);
  EXPECT_EQ(c100.labels().shape(), Shape({4, 100}));
  EXPECT_EQ(c100.superclasses()[3], (3 * 3 + 1) % 20);
  const auto coarse = data::load_cifar100<float>(dir.str(), data::Train, /*coarse=*/true);
  EXPECT_EQ(coarse.labels.shape(), Shape({4, 20}));
  EXPECT_EQ(coarse.labels.get({3, 10}), 1.0f);
  EXPECT_THROW_WITH(data::load_cifar100<float>(dir.str(), data::Test), IOError, dir.file("test.bin"));
}
