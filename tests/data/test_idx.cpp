#include <gtest/gtest.h>

#include <cmath>

#include "magmadnn/core/errors.h"
#include "magmadnn/io/byte_reader.h"
#include "magmadnn/io/idx.h"
#include "temp_dir.h"

using namespace magmadnn;
using magmadnn::test::TempDir;

namespace {
std::vector<double> ramp(std::int64_t n, double step, double start) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[i] = start + step * double(i);
  return v;
}
}  // namespace

TEST(Idx, RoundTripEveryTypePlainAndGzip) {
  TempDir dir;
  const Shape shape{3, 4, 5};
  struct Case {
    io::IdxType type;
    std::vector<double> values;
  };
  const std::vector<Case> cases = {
      {io::IdxType::u8, ramp(60, 4, 0)},          {io::IdxType::i8, ramp(60, 2, -60)},
      {io::IdxType::i16, ramp(60, 1000, -30000)}, {io::IdxType::i32, ramp(60, 70000, -2000000)},
      {io::IdxType::f32, ramp(60, 0.25, -7.5)},   {io::IdxType::f64, ramp(60, 1e-3, 1.0 / 3)}};
  for (const bool gz : {false, true}) {
    for (const Case& c : cases) {
      const std::string path = dir.file(std::string("a_") + io::idx_type_name(c.type) + (gz ? ".gz" : ""));
      io::write_idx(path, c.type, shape, c.values, gz);
      const io::IdxArray a = io::read_idx(path);
      EXPECT_EQ(a.type, c.type);
      EXPECT_EQ(a.shape, shape);
      std::vector<double> back(60);
      a.convert(back.data());
      for (int i = 0; i < 60; ++i) ASSERT_EQ(back[i], c.values[i]) << io::idx_type_name(c.type) << " gz=" << gz;
      io::ByteReader r(path);
      EXPECT_EQ(r.compressed(), gz);
    }
  }
}

TEST(Idx, TensorWithScaleAndCompressionDetectedFromContent) {
  TempDir dir;
  const std::string path = dir.file("images-without-gz-suffix");
  io::write_idx(path, io::IdxType::u8, {2, 2, 2}, {0, 255, 128, 1, 2, 3, 4, 5}, /*gzip=*/true);
  const Tensor<float> t = io::read_idx_tensor<float>(path, HOST, 1.0 / 255.0);
  EXPECT_EQ(t.shape(), Shape({2, 2, 2}));
  EXPECT_FLOAT_EQ(t.get(1), 1.0f);
  EXPECT_FLOAT_EQ(t.get(2), 128.0f / 255.0f);
  EXPECT_FLOAT_EQ(t.get(7), 5.0f / 255.0f);
}

TEST(Idx, WrongMagicNamesFileAndBytes) {
  TempDir dir;
  const std::string path = dir.file("bad_magic");
  test::write_bytes(path, {0x08, 0x03, 0x00, 0x00, 0, 0, 0, 1, 7});
  EXPECT_THROW_WITH(io::read_idx(path), IOError, path, "wrong magic number", "08 03 00 00", "offset 0");
  const std::string path2 = dir.file("bad_type");
  test::write_bytes(path2, {0x00, 0x00, 0x07, 0x01, 0, 0, 0, 1, 7});
  EXPECT_THROW_WITH(io::read_idx(path2), IOError, path2, "00 00 07 01");
}

TEST(Idx, TruncatedHeader) {
  TempDir dir;
  const std::string path = dir.file("short_header");
  // Three dimensions announced, one and a half present.
  test::write_bytes(path, {0, 0, 0x08, 0x03, 0, 0, 0, 2, 0, 0});
  EXPECT_THROW_WITH(io::read_idx(path), IOError, path, "truncated", "dimension 1 of the IDX header", "offset 8",
                    "ends after 2");
}

TEST(Idx, TruncatedDataPlainAndGzip) {
  TempDir dir;
  for (const bool gz : {false, true}) {
    // A header for {2, 3, 3} followed by only 10 of the 18 data bytes.
    std::vector<unsigned char> bytes = {0, 0, 0x08, 0x03, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 3};
    for (int i = 0; i < 10; ++i) bytes.push_back(static_cast<unsigned char>(i));
    const std::string path = dir.file(gz ? "short_data.gz" : "short_data");
    io::ByteWriter w(path, gz);
    w.write(bytes.data(), bytes.size());
    w.close();
    // Refused from the header alone, before the 18 bytes are allocated.
    EXPECT_THROW_WITH(io::read_idx(path), IOError, path, "truncated", "claims shape {2, 3, 3}",
                      "18 bytes from offset 16", "holds only 10 bytes");
  }
}

TEST(Idx, CutGzipStreamIsAnError) {
  TempDir dir;
  const std::string path = dir.file("cut.gz");
  std::vector<double> noise(5000);
  for (std::size_t i = 0; i < noise.size(); ++i) noise[i] = double((i * 7919u) % 251u);
  io::write_idx(path, io::IdxType::u8, {50, 100}, noise, true);
  std::vector<unsigned char> bytes = test::read_bytes(path);
  bytes.resize(bytes.size() / 2);
  test::write_bytes(path, bytes);
  try {
    io::read_idx(path);
    FAIL() << "no error for a cut gzip file";
  } catch (const IOError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_TRUE(msg.find("truncated") != std::string::npos) << msg;
  }
}

TEST(Idx, TrailingBytesAreReported) {
  TempDir dir;
  const std::string path = dir.file("trailing");
  test::write_bytes(path, {0, 0, 0x08, 0x01, 0, 0, 0, 2, 5, 6, 7, 8, 9});
  EXPECT_THROW_WITH(io::read_idx(path), IOError, path, "3 unexpected bytes", "offset 10", "{2}");
}

TEST(Idx, MissingFileAndPlainOrGzLookup) {
  TempDir dir;
  EXPECT_THROW_WITH(io::read_idx(dir.file("nope")), IOError, dir.file("nope"), "cannot open");
  EXPECT_THROW_WITH(io::find_plain_or_gz(dir.file("x")), IOError, dir.file("x"), dir.file("x.gz"));
  test::write_bytes(dir.file("x.gz"), {1});
  EXPECT_EQ(io::find_plain_or_gz(dir.file("x")), dir.file("x.gz"));
  test::write_bytes(dir.file("x"), {1});
  EXPECT_EQ(io::find_plain_or_gz(dir.file("x")), dir.file("x"));
}

TEST(Idx, WriteRejectsValuesThatDoNotFit) {
  TempDir dir;
  EXPECT_THROW_WITH(io::write_idx(dir.file("w"), io::IdxType::u8, {2}, {1, 256}), ValueError, "256", "index 1");
  EXPECT_THROW(io::write_idx(dir.file("w"), io::IdxType::u8, {3}, {1, 2}), ShapeError);
}
