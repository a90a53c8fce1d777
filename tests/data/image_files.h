/// @file image_files.h
/// Writing small JPEG and PNG files for the image-folder tests, with the
/// same libraries the reader uses (TurboJPEG and libpng's simplified API).
/// The JPEG half is jpeg_files.h, for tests whose include path has another
/// png.h (the command line's report encoder).
#pragma once

#include <png.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/jpeg_files.h"
#include "data/temp_dir.h"

namespace magmadnn::test {

/// Interleaved 8-bit pixels, channels 1 (grey), 2 (grey + alpha), 3 (RGB), 4 (RGBA).
inline void write_png(const std::string& path, int w, int h, int channels, const std::vector<std::uint8_t>& px) {
  png_image im{};
  im.version = PNG_IMAGE_VERSION;
  im.width = static_cast<png_uint_32>(w);
  im.height = static_cast<png_uint_32>(h);
  static const png_uint_32 formats[] = {PNG_FORMAT_GRAY, PNG_FORMAT_GA, PNG_FORMAT_RGB, PNG_FORMAT_RGBA};
  im.format = formats[channels - 1];
  if (!png_image_write_to_file(&im, path.c_str(), 0, px.data(), 0, nullptr))
    throw std::runtime_error("write_png " + path + ": " + im.message);
}

}  // namespace magmadnn::test
