/// @file image_decode.h
/// Decoding one JPEG or PNG image into 8-bit pixels (for image folders,
/// data/image_folder.h).
///
/// JPEG is decoded by libjpeg-turbo's TurboJPEG API, PNG by libpng's
/// simplified API; the format is told by the file's first bytes, not by its
/// name, so a PNG named .jpg decodes. Both are optional at build time
/// (MAGMADNN_HAVE_IMAGES, tools/install-deps.sh installs libturbojpeg0-dev
/// and libpng-dev): without them every function here but
/// image_decoding_available() throws NotSupportedError saying so.
///
/// Guarantees: every failure is an ImageError whose reason() says what is
/// wrong in words (not a JPEG or PNG, truncated or corrupt data, zero bytes,
/// unreadable file, too many pixels); nothing is read outside the buffer
/// given. PNG pixels are the file's 8-bit values exactly (16-bit samples are
/// reduced to 8 bits by libpng); JPEG pixels are libjpeg-turbo's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "magmadnn/core/errors.h"

namespace magmadnn::data {

/// An image that could not be read or decoded. what() is "FILE: REASON"
/// (or "REASON" for a buffer); reason() is the REASON alone.
class ImageError : public IOError {
 public:
  ImageError(const std::string& file, const std::string& reason)
      : IOError(file.empty() ? reason : file + ": " + reason), reason_(reason) {}
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string reason_;
};

/// 8-bit pixels, interleaved: pixel (y, x) channel c is
/// pixels[(y * width + x) * channels + c].
struct Image8 {
  std::int64_t height = 0, width = 0;
  int channels = 0;  ///< 1 (grey) or 3 (RGB)
  std::vector<std::uint8_t> pixels;
};

/// The most pixels (width x height) an image may have: a bigger one is
/// refused before its pixels are allocated (a small file may claim a huge
/// image).
inline constexpr std::int64_t kMaxImagePixels = std::int64_t{1} << 27;

/// True when this build decodes JPEG and PNG.
bool image_decoding_available();

/// Decodes JPEG or PNG bytes into `channels` (1 or 3) channels: grey is
/// repeated into R, G and B; colour becomes grey by ITU-R BT.601 luma
/// (299 R + 587 G + 114 B) / 1000, rounded; an alpha channel is dropped (the
/// colour values are kept as stored, not composited). `file` only names the
/// image in errors. Throws ImageError (see the file comment), ValueError
/// for `channels` other than 1 or 3.
Image8 decode_image(const std::uint8_t* data, std::size_t size, int channels, const std::string& file = "");

/// Reads and decodes the file at `path` (decode_image). An unreadable or
/// empty file is an ImageError naming it.
Image8 read_image(const std::string& path, int channels);

/// The file's bytes (ImageError naming it when it cannot be opened or read).
std::vector<std::uint8_t> read_file_bytes(const std::string& path);

/// Width and height from the header alone (no pixels decoded): a cheap check
/// that the file is a JPEG or PNG. Throws ImageError as decode_image.
struct ImageSize {
  std::int64_t height = 0, width = 0;
};
ImageSize image_size(const std::uint8_t* data, std::size_t size, const std::string& file = "");

}  // namespace magmadnn::data
