// png.h and base64.h: the encoders behind report.html's inline images.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>

#include "base64.h"
#include "magmadnn/core/errors.h"
#include "png.h"

using namespace magmadnn;
using namespace magmadnn::cli;

TEST(CliBase64, EncodesWithPadding) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode(std::string("\xff\xfe\x00", 3)), "//4A");
}

TEST(CliPng, RoundTripsThroughZlib) {
  const int w = 5, h = 3;
  std::vector<std::uint8_t> pixels;
  for (int i = 0; i < w * h; ++i) pixels.push_back(static_cast<std::uint8_t>(i * 17));
  const std::string png = encode_png_gray8(pixels, w, h);
  ASSERT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(png[at + i]);
    return v;
  };
  std::vector<std::string> types;
  std::string idat;
  std::size_t at = 8;
  while (at < png.size()) {
    const std::uint32_t len = be32(at);
    const std::string typed = png.substr(at + 4, 4 + len);
    EXPECT_EQ(be32(at + 8 + len), crc32(0, reinterpret_cast<const Bytef*>(typed.data()), static_cast<uInt>(typed.size())));
    types.push_back(typed.substr(0, 4));
    if (types.back() == "IHDR") {
      EXPECT_EQ(be32(at + 8), 5u);
      EXPECT_EQ(be32(at + 12), 3u);
      EXPECT_EQ(typed.substr(12), std::string("\x08\x00\x00\x00\x00", 5));
    }
    if (types.back() == "IDAT") idat += typed.substr(4);
    at += 12 + len;
  }
  EXPECT_EQ(at, png.size());
  EXPECT_EQ(types, std::vector<std::string>({"IHDR", "IDAT", "IEND"}));
  std::vector<std::uint8_t> raw((w + 1) * h);
  uLongf raw_size = raw.size();
  ASSERT_EQ(uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()), Z_OK);
  ASSERT_EQ(raw_size, raw.size());
  for (int r = 0; r < h; ++r) {
    EXPECT_EQ(raw[r * (w + 1)], 0);
    for (int c = 0; c < w; ++c) EXPECT_EQ(raw[r * (w + 1) + 1 + c], pixels[r * w + c]);
  }
}

TEST(CliPng, RejectsWrongSizes) {
  EXPECT_THROW(encode_png_gray8({1, 2, 3}, 2, 2), ValueError);
  EXPECT_THROW(encode_png_gray8({}, 0, 0), ValueError);
}
