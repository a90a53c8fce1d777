// Hostile input to the readers: every case here was a crash, a bare
// std::bad_alloc, a multi-gigabyte allocation or silently accepted corruption.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "magmadnn/core/errors.h"
#include "magmadnn/io/byte_reader.h"
#include "magmadnn/io/checkpoint.h"
#include "magmadnn/io/cifar.h"
#include "magmadnn/io/csv.h"
#include "magmadnn/io/idx.h"
#include "magmadnn/run/spec.h"
#include "temp_dir.h"

using namespace magmadnn;
using magmadnn::test::TempDir;

namespace {

void write_gz(const std::string& path, const std::vector<unsigned char>& bytes) {
  io::ByteWriter w(path, /*gzip=*/true);
  w.write(bytes.data(), bytes.size());
  w.close();
}

std::vector<unsigned char> idx_header(std::uint32_t n, std::uint32_t rows, std::uint32_t cols) {
  std::vector<unsigned char> h = {0, 0, 0x08, 0x03};
  for (const std::uint32_t d : {n, rows, cols})
    for (int s = 24; s >= 0; s -= 8) h.push_back(static_cast<unsigned char>(d >> s));
  return h;
}

std::string labelled_csv(int rows, int odd_row, const std::string& odd_label) {
  std::string text;
  for (int i = 0; i < rows; ++i) text += (i == odd_row ? odd_label : std::to_string(i % 10)) + ",0.5,0.25\n";
  return text;
}

}  // namespace

// Case 1: a label of 2^52 - 1 on 3000 rows overflowed rows x classes.
TEST(HostileCsv, HugeLabelIsRefusedBeforeAllocating) {
  TempDir dir;
  const std::string path = dir.file("huge_label.csv");
  test::write_text(path, labelled_csv(3000, 1234, "4503599627370495"));
  io::CsvOptions o;
  o.label_column = 0;
  EXPECT_THROW_WITH(io::read_csv_labeled<float>(path, o), IOError, path + ":1235, column 1",
                    "label 4503599627370495", "4503599627370496 classes", "overflows int64");
  // A million classes on 3000 rows: 3e9 elements for a ~40 KB file.
  test::write_text(path, labelled_csv(3000, 7, "999999"));
  EXPECT_THROW_WITH(io::read_csv_labeled<double>(path, o), IOError, path + ":8, column 1", "label 999999",
                    "3000 x 1000000 = 3000000000 elements");
  // The label column at the end is named by its own column number.
  o.label_column = -1;
  test::write_text(path, "0.5,1\n0.25,16777216\n");
  EXPECT_THROW_WITH(io::read_csv_labeled<float>(path, o), IOError, path + ":2, column 2", "label 16777216",
                    "at most 16777216 classes");
  // Within the bounds: 3000 x 1000 one-hot from a small file is fine, and
  // the index encoding never allocates per class.
  o.label_column = 0;
  test::write_text(path, labelled_csv(3000, 5, "999"));
  EXPECT_EQ(io::read_csv_labeled<float>(path, o).y.shape(), Shape({3000, 1000}));
  test::write_text(path, labelled_csv(3000, 5, "4503599627370495"));
  o.labels = io::LabelEncoding::Index;
  EXPECT_EQ(io::read_csv_labeled<double>(path, o).y.get(5), 4503599627370495.0);
}

// Case 2: every gzip member's CRC-32 and ISIZE are checked.
TEST(HostileGzip, CutOrCorruptTrailerIsAnError) {
  TempDir dir;
  const std::string good = dir.file("good.idx.gz");
  // 300 KB that do not compress: the trailer lies beyond zlib's first
  // buffer, so only a check of the whole member can see it is missing.
  std::vector<double> values(300000);
  std::uint32_t state = 12345;
  for (double& v : values) v = double((state = state * 1664525u + 1013904223u) >> 24);
  io::write_idx(good, io::IdxType::u8, {3000, 10, 10}, values, true);
  const std::vector<unsigned char> bytes = test::read_bytes(good);
  ASSERT_GT(bytes.size(), 290000u);
  ASSERT_EQ(io::read_idx(good).numel(), 300000);

  const std::string path = dir.file("bad.idx.gz");
  for (const std::size_t cut : {8u, 4u, 1u}) {  // the whole trailer, ISIZE, one byte of it
    test::write_bytes(path, std::vector<unsigned char>(bytes.begin(), bytes.end() - cut));
    EXPECT_THROW_WITH(io::read_idx(path), IOError, path, "truncated gzip member 1", "8-byte");
  }
  auto crc = bytes;
  crc[crc.size() - 8] ^= 0x01;  // first byte of the CRC-32
  test::write_bytes(path, crc);
  EXPECT_THROW_WITH(io::read_idx(path), IOError, path, "corrupt gzip member 1", "incorrect data check");
  auto isize = bytes;
  isize[isize.size() - 4] ^= 0x01;  // first byte of ISIZE
  test::write_bytes(path, isize);
  EXPECT_THROW_WITH(io::read_idx(path), IOError, path, "corrupt gzip member 1", "incorrect length check");
  auto trailing = bytes;
  trailing.insert(trailing.end(), {'j', 'u', 'n', 'k'});
  test::write_bytes(path, trailing);
  EXPECT_THROW_WITH(io::read_idx(path), IOError, path, "after gzip member 1", "not another gzip member");

  // Two members back to back are one stream (as gzip -c a b > ab.gz writes).
  const std::string two = dir.file("two_members.gz");
  write_gz(dir.file("a.gz"), {'a', 'b', '\n'});
  write_gz(dir.file("b.gz"), {'c', 'd', '\n'});
  auto joined = test::read_bytes(dir.file("a.gz"));
  const auto b = test::read_bytes(dir.file("b.gz"));
  joined.insert(joined.end(), b.begin(), b.end());
  test::write_bytes(two, joined);
  io::ByteReader in(two);
  EXPECT_EQ(in.size(), 6);
  EXPECT_EQ(in.read_rest(), (std::vector<std::uint8_t>{'a', 'b', '\n', 'c', 'd', '\n'}));
  // The second member cut short is named as member 2.
  joined.resize(joined.size() - 3);
  test::write_bytes(two, joined);
  EXPECT_THROW_WITH(io::ByteReader{two}, IOError, two, "truncated gzip member 2");
}

// Case 3: what a header claims is checked against what the file holds
// before anything is allocated for it.
TEST(HostileIdx, HeaderClaimsBeyondTheFileAreRefusedBeforeAllocating) {
  TempDir dir;
  const std::string path = dir.file("images.idx");
  auto h = idx_header(0xFFFFFFFFu, 28, 28);
  h.resize(h.size() + 100, 7);
  test::write_bytes(path, h);
  EXPECT_THROW_WITH(io::read_idx(path), IOError, path, "claims shape {4294967295, 28, 28}",
                    "3367254359280 bytes from offset 16", "holds only 100 bytes");
  // 4 million images claimed by a 1.5 MB file: 3.1 GB were allocated first.
  auto m = idx_header(4000000, 28, 28);
  m.resize(m.size() + 1500000, 0);
  test::write_bytes(path, m);
  EXPECT_THROW_WITH(io::read_idx(path), IOError, path, "claims shape {4000000, 28, 28}", "3136000000 bytes",
                    "holds only 1500000 bytes");
  // The same behind gzip: compared with what the stream decompresses to.
  const std::string gz = dir.file("images.idx.gz");
  write_gz(gz, m);
  EXPECT_LT(test::read_bytes(gz).size(), 10000u);
  EXPECT_THROW_WITH(io::read_idx(gz), IOError, gz, "claims shape {4000000, 28, 28}", "holds only 1500000 bytes",
                    "1500016 in all once decompressed");
}

TEST(HostileCifar, GzipWithCutTrailerIsAnError) {
  TempDir dir;
  io::CifarRecords r;
  r.count = 100;  // 300 KB of noise: the trailer is beyond zlib's first buffer
  r.pixels.resize(100 * io::kCifarPixels);
  std::uint32_t state = 7;
  for (auto& p : r.pixels) p = static_cast<std::uint8_t>((state = state * 1664525u + 1013904223u) >> 24);
  r.fine.assign(100, 3);
  const std::string path = dir.file("test_batch.bin.gz");
  io::write_cifar_bin(path, io::CifarKind::Cifar10, r, true);
  EXPECT_EQ(io::read_cifar_bin(path, io::CifarKind::Cifar10).count, 100);
  auto bytes = test::read_bytes(path);
  bytes.resize(bytes.size() - 8);
  test::write_bytes(path, bytes);
  EXPECT_THROW_WITH(io::read_cifar_bin(path, io::CifarKind::Cifar10), IOError, path, "truncated gzip member");
}

// Case 4 (config): deep nesting is refused by a scan of the text before the
// JSON parser (50,000 levels crashed with SIGSEGV).
TEST(HostileConfig, DeepNestingIsAConfigError) {
  TempDir dir;
  const std::string path = dir.file("deep.json");
  for (const int levels : {50000, 20000, 1001}) {
    test::write_text(path, std::string(levels, '[') + std::string(levels, ']'));
    EXPECT_THROW_WITH(run::read_json_file(path), run::ConfigError, path, "more than 1000 levels",
                      "byte offset 1000");
  }
  test::write_text(path, "{\"a\": \"" + std::string(5000, '[') + "\", \"b\": " + std::string(999, '[') +
                             std::string(999, ']') + "}");
  // Brackets inside strings do not count; '{' and 999 '[' are 1000 levels: accepted.
  const run::Json j = run::read_json_file(path);
  EXPECT_TRUE(j.is_object());
  EXPECT_THROW(run::parse_config(j), run::ConfigError);
}

// Found by fuzz_checkpoint: a shape of 2^61 f64 elements "needed" 0 bytes
// once numel x 8 wrapped around, so a tensor with no data was accepted.
TEST(HostileCheckpoint, ShapeWhoseByteCountOverflowsIsRefused) {
  TempDir dir;
  std::vector<unsigned char> payload;
  auto le = [&](std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) payload.push_back(static_cast<unsigned char>(v >> (8 * i)));
  };
  le(0, 4);  // no header entries
  le(1, 4);  // one tensor
  le(1, 4);
  payload.push_back('w');
  payload.push_back(1);  // f64
  payload.push_back(1);  // rank 1
  le(std::uint64_t(1) << 61, 8);
  le(0, 8);  // data bytes: 2^61 x 8 mod 2^64
  std::vector<unsigned char> file(io::kCheckpointMagic, io::kCheckpointMagic + 8);
  for (int i = 0; i < 4; ++i) file.push_back(static_cast<unsigned char>(io::kCheckpointVersion >> (8 * i)));
  for (int i = 0; i < 8; ++i) file.push_back(static_cast<unsigned char>(std::uint64_t(payload.size()) >> (8 * i)));
  file.insert(file.end(), payload.begin(), payload.end());
  const std::uint32_t crc = io::crc32(file.data(), file.size());
  for (int i = 0; i < 4; ++i) file.push_back(static_cast<unsigned char>(crc >> (8 * i)));
  const std::string path = dir.file("wrap.ckpt");
  test::write_bytes(path, file);
  EXPECT_THROW_WITH(io::read_checkpoint(path), IOError, path, "tensor 'w' has 0 data bytes",
                    "{2305843009213693952} needs more than 2^63");
}

// Found by fuzz_config: a number too large for a double escaped as
// nlohmann's out_of_range instead of a ConfigError.
TEST(HostileConfig, NumberOutOfRangeIsAConfigError) {
  TempDir dir;
  const std::string path = dir.file("big.json");
  test::write_text(path, "{\"epochs\": 7e7777}");
  EXPECT_THROW_WITH(run::read_json_file(path), run::ConfigError, path, "invalid JSON", "epochs (line 1, column 12): number out of range");
}
