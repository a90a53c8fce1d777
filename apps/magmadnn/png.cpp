#include "png.h"

#include <zlib.h>

#include "magmadnn/core/errors.h"

namespace magmadnn::cli {
namespace {

void put_u32(std::string& out, std::uint32_t v) {  // PNG integers are big-endian
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xff);
}

void put_chunk(std::string& out, const char type[4], const std::string& body) {
  put_u32(out, static_cast<std::uint32_t>(body.size()));
  const std::string typed = std::string(type, 4) + body;  // the CRC covers the type and the body
  out += typed;
  put_u32(out, static_cast<std::uint32_t>(
                   crc32(0, reinterpret_cast<const Bytef*>(typed.data()), static_cast<uInt>(typed.size()))));
}

}  // namespace

std::string encode_png_gray8(const std::vector<std::uint8_t>& pixels, int width, int height) {
  MAGMADNN_CHECK(width > 0 && height > 0, ValueError, "encode_png_gray8: size " << width << "x" << height);
  MAGMADNN_CHECK(pixels.size() == static_cast<std::size_t>(width) * static_cast<std::size_t>(height), ValueError,
                 "encode_png_gray8: " << pixels.size() << " pixels for a " << width << "x" << height << " image");
  // Every scanline starts with its filter type; 0 (none) is plenty for thumbnails.
  std::string raw;
  raw.reserve(pixels.size() + static_cast<std::size_t>(height));
  for (int r = 0; r < height; ++r) {
    raw += '\0';
    raw.append(reinterpret_cast<const char*>(pixels.data()) + static_cast<std::size_t>(r) * width,
               static_cast<std::size_t>(width));
  }
  uLongf packed_size = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(packed_size, '\0');
  const int rc = compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size,
                           reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()),
                           Z_BEST_COMPRESSION);
  MAGMADNN_CHECK(rc == Z_OK, IOError, "encode_png_gray8: zlib compress2 failed (" << rc << ")");
  packed.resize(packed_size);

  std::string ihdr;
  put_u32(ihdr, static_cast<std::uint32_t>(width));
  put_u32(ihdr, static_cast<std::uint32_t>(height));
  ihdr += std::string("\x08\x00\x00\x00\x00", 5);  // depth 8, greyscale, deflate, adaptive filters, no interlace

  std::string png("\x89PNG\r\n\x1a\n", 8);
  put_chunk(png, "IHDR", ihdr);
  put_chunk(png, "IDAT", packed);
  put_chunk(png, "IEND", "");
  return png;
}

}  // namespace magmadnn::cli
