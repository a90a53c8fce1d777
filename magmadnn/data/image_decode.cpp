#include "magmadnn/data/image_decode.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

#include "magmadnn/core/config.h"

#if MAGMADNN_HAVE_IMAGES
#include <png.h>
#include <turbojpeg.h>
#endif

namespace magmadnn::data {

namespace {

[[noreturn]] void not_an_image(std::size_t n, const std::string& file) {
  if (n == 0) throw ImageError(file, "zero bytes (an empty file)");
  throw ImageError(file, "not a JPEG or PNG image (its first bytes are neither format's signature)");
}

#if MAGMADNN_HAVE_IMAGES

bool is_jpeg(const std::uint8_t* d, std::size_t n) { return n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF; }
bool is_png(const std::uint8_t* d, std::size_t n) {
  static const std::uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return n >= 8 && std::memcmp(d, sig, 8) == 0;
}

void check_pixels(std::int64_t w, std::int64_t h, const std::string& file) {
  if (w <= 0 || h <= 0) throw ImageError(file, "an image of " + std::to_string(w) + " x " + std::to_string(h) + " pixels");
  if (w * h > kMaxImagePixels) {
    throw ImageError(file, std::to_string(w) + " x " + std::to_string(h) + " pixels, more than the " +
                               std::to_string(kMaxImagePixels) + " an image may have");
  }
}

// Interleaved `from`-channel pixels (1 grey, 2 grey+alpha, 3 RGB, 4 RGBA)
// to `to` channels (1 or 3); alpha is dropped.
Image8 convert_channels(std::vector<std::uint8_t> px, std::int64_t h, std::int64_t w, int from, int to) {
  Image8 out;
  out.height = h;
  out.width = w;
  out.channels = to;
  const int colour = from >= 3 ? 3 : 1;
  if (from == to) {
    out.pixels = std::move(px);
    return out;
  }
  const std::int64_t n = h * w;
  out.pixels.resize(static_cast<std::size_t>(n * to));
  std::uint8_t* o = out.pixels.data();
  const std::uint8_t* s = px.data();
  for (std::int64_t i = 0; i < n; ++i, s += from) {
    if (to == 1 && colour == 3) {
      o[i] = static_cast<std::uint8_t>((299 * s[0] + 587 * s[1] + 114 * s[2] + 500) / 1000);
    } else if (to == 1) {
      o[i] = s[0];
    } else if (colour == 3) {
      o[3 * i] = s[0], o[3 * i + 1] = s[1], o[3 * i + 2] = s[2];
    } else {
      o[3 * i] = o[3 * i + 1] = o[3 * i + 2] = s[0];
    }
  }
  return out;
}

struct TjFree {
  void operator()(void* h) const { tjDestroy(h); }
};
using TjHandle = std::unique_ptr<void, TjFree>;

// One decompressor per thread: creating one costs more than a small image.
tjhandle decompressor() {
  thread_local TjHandle h(tjInitDecompress());
  if (!h) throw ImageError("", std::string("TurboJPEG could not start: ") + tjGetErrorStr2(nullptr));
  return h.get();
}

struct JpegHeader {
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
};

JpegHeader jpeg_header(const std::uint8_t* d, std::size_t n, const std::string& file) {
  tjhandle tj = decompressor();
  JpegHeader hd;
  if (tjDecompressHeader3(tj, d, static_cast<unsigned long>(n), &hd.w, &hd.h, &hd.subsamp, &hd.colorspace) != 0) {
    throw ImageError(file, std::string("corrupt JPEG header (") + tjGetErrorStr2(tj) + ")");
  }
  if (hd.w <= 0 || hd.h <= 0) throw ImageError(file, "corrupt JPEG header (no image size before the data ends)");
  check_pixels(hd.w, hd.h, file);
  return hd;
}

Image8 decode_jpeg(const std::uint8_t* d, std::size_t n, int channels, const std::string& file) {
  const JpegHeader hd = jpeg_header(d, n, file);
  tjhandle tj = decompressor();
  const bool cmyk = hd.colorspace == TJCS_CMYK || hd.colorspace == TJCS_YCCK;
  const int from = hd.colorspace == TJCS_GRAY ? 1 : cmyk ? 4 : 3;
  const int format = from == 1 ? TJPF_GRAY : cmyk ? TJPF_CMYK : TJPF_RGB;
  std::vector<std::uint8_t> px(static_cast<std::size_t>(std::int64_t{hd.w} * hd.h * from));
  // Warnings (a truncated file is one) fail too: a partly grey image is not the image.
  if (tjDecompress2(tj, d, static_cast<unsigned long>(n), px.data(), hd.w, 0, hd.h, format, TJFLAG_STOPONWARNING) != 0) {
    throw ImageError(file, std::string("corrupt or truncated JPEG data (") + tjGetErrorStr2(tj) + ")");
  }
  if (cmyk) {
    // Adobe's inverted CMYK, as most CMYK JPEGs store it: R = C x K / 255.
    for (std::size_t i = 0; i < px.size(); i += 4) {
      const unsigned k = px[i + 3];
      for (int c = 0; c < 3; ++c) px[i + c] = static_cast<std::uint8_t>((px[i + c] * k + 127) / 255);
    }
  }
  return convert_channels(std::move(px), hd.h, hd.w, from, channels);
}

struct PngFree {
  void operator()(png_image* im) const { png_image_free(im); }
};

png_image png_begin(const std::uint8_t* d, std::size_t n, const std::string& file) {
  png_image im;
  std::memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&im, d, n)) {
    const std::string why = im.message;
    png_image_free(&im);
    throw ImageError(file, "corrupt PNG header (" + why + ")");
  }
  check_pixels(im.width, im.height, file);
  return im;
}

Image8 decode_png(const std::uint8_t* d, std::size_t n, int channels, const std::string& file) {
  png_image im = png_begin(d, n, file);
  std::unique_ptr<png_image, PngFree> guard(&im);
  // The file's own channels at 8 bits (a palette expanded): alpha is dropped
  // below, not composited, so stored colour values come through unchanged.
  im.format &= PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA;
  const int from = static_cast<int>(PNG_IMAGE_SAMPLE_CHANNELS(im.format));
  std::vector<std::uint8_t> px(PNG_IMAGE_SIZE(im));
  if (!png_image_finish_read(&im, nullptr, px.data(), 0, nullptr)) {
    throw ImageError(file, std::string("corrupt or truncated PNG data (") + im.message + ")");
  }
  return convert_channels(std::move(px), im.height, im.width, from, channels);
}

#endif  // MAGMADNN_HAVE_IMAGES

void check_available() {
  if (!image_decoding_available()) {
    throw NotSupportedError(
        "this magmadnn was built without JPEG and PNG decoding: libturbojpeg0-dev and libpng-dev were not found "
        "when it was configured (install them with tools/install-deps.sh, then configure and build again)");
  }
}

}  // namespace

bool image_decoding_available() {
#if MAGMADNN_HAVE_IMAGES
  return true;
#else
  return false;
#endif
}

Image8 decode_image(const std::uint8_t* data, std::size_t size, int channels, const std::string& file) {
  check_available();
  MAGMADNN_CHECK(channels == 1 || channels == 3, ValueError,
                 "decode_image: " << channels << " channels asked for; images decode to 1 (grey) or 3 (RGB)");
#if MAGMADNN_HAVE_IMAGES
  if (is_jpeg(data, size)) return decode_jpeg(data, size, channels, file);
  if (is_png(data, size)) return decode_png(data, size, channels, file);
#endif
  not_an_image(size, file);
}

ImageSize image_size(const std::uint8_t* data, std::size_t size, const std::string& file) {
  check_available();
#if MAGMADNN_HAVE_IMAGES
  if (is_jpeg(data, size)) {
    const JpegHeader h = jpeg_header(data, size, file);
    return {h.h, h.w};
  }
  if (is_png(data, size)) {
    png_image im = png_begin(data, size, file);
    const ImageSize s{im.height, im.width};
    png_image_free(&im);
    return s;
  }
#endif
  not_an_image(size, file);
}

std::vector<std::uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw ImageError(path, std::string("cannot be opened (") + std::strerror(errno) + ")");
  const std::streamoff n = in.tellg();
  if (n < 0) throw ImageError(path, "cannot be read (not a regular file?)");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n));
  in.seekg(0);
  if (n > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), n)) {
    throw ImageError(path, std::string("cannot be read (") + std::strerror(errno) + ")");
  }
  return bytes;
}

Image8 read_image(const std::string& path, int channels) {
  const std::vector<std::uint8_t> bytes = read_file_bytes(path);
  return decode_image(bytes.data(), bytes.size(), channels, path);
}

}  // namespace magmadnn::data
