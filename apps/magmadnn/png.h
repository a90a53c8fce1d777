/// @file png.h
/// A minimal PNG encoder for small greyscale images, so report.html can show
/// test images inline (as data: URIs) without an image library.
///
/// Requires: width and height > 0 and pixels.size() == width * height
/// (row-major, 0 black .. 255 white); otherwise ValueError.
/// Guarantees: a complete PNG file (signature, IHDR 8-bit greyscale, one
/// zlib-compressed IDAT with filter type 0 on every row, IEND), every chunk
/// with its CRC-32, readable by any PNG decoder.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace magmadnn::cli {

/// The bytes of the PNG file of the image.
std::string encode_png_gray8(const std::vector<std::uint8_t>& pixels, int width, int height);

}  // namespace magmadnn::cli
