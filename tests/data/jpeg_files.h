/// @file jpeg_files.h
/// Writing small JPEG files for tests (TurboJPEG, as the reader), and a
/// smooth test pattern. image_files.h adds PNG.
#pragma once

#include <turbojpeg.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/temp_dir.h"

namespace magmadnn::test {

/// The bytes of a JPEG of interleaved pixels, channels 1 (grey) or 3 (RGB, 4:4:4).
inline std::vector<std::uint8_t> jpeg_bytes(int w, int h, int channels, const std::vector<std::uint8_t>& px,
                                            int quality = 95) {
  tjhandle tj = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(tj, px.data(), w, 0, h, channels == 1 ? TJPF_GRAY : TJPF_RGB, &buf, &size,
                             channels == 1 ? TJSAMP_GRAY : TJSAMP_444, quality, 0);
  std::vector<std::uint8_t> out(buf, buf + (rc == 0 ? size : 0));
  tjFree(buf);
  tjDestroy(tj);
  if (rc != 0) throw std::runtime_error("jpeg_bytes failed");
  return out;
}

inline void write_jpeg(const std::string& path, int w, int h, int channels, const std::vector<std::uint8_t>& px,
                       int quality = 95) {
  const auto b = jpeg_bytes(w, h, channels, px, quality);
  write_bytes(path, std::vector<unsigned char>(b.begin(), b.end()));
}

/// A smooth test pattern (JPEG keeps it within a few levels), varied by `seed`.
inline std::vector<std::uint8_t> pattern(int w, int h, int channels, int seed) {
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w * h * channels));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c)
        px[static_cast<std::size_t>((y * w + x) * channels + c)] =
            static_cast<std::uint8_t>((40 + seed * 23 + x * 180 / w + y * 60 / h + c * 50) % 256);
  return px;
}

}  // namespace magmadnn::test
