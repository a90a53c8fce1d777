// Decoding and augmenting an image folder (data/image_folder.h): images per
// second of read + JPEG decode + random resized crop + flip + normalisation
// (the training form) and of the evaluation form (centre crop), at each
// given number of decode threads, on a folder of JPEGs this program writes:
// Fashion-MNIST training images scaled bilinearly from 28 x 28 to S x S,
// tinted per class into RGB, encoded by TurboJPEG at quality 90 with 4:2:0
// chroma (ImageNet's usual form), 10 class folders.
//
// Usage: bench_image_folder_decode [--out DIR] [--images N] [--side S]
//          [--batch B] [--threads 1,2] [--rounds R] [--noise A]
// --noise A adds uniform noise in [-A, A] to each pixel before encoding:
// the smooth upscaled images make JPEGs of about 5 KiB, photographs of the
// same size several times more, and the entropy decoding grows with them.
// DIR/train and DIR/test are written when DIR/train does not exist yet
// (bench_resnet50_step --folder DIR reads the same folder). Each
// measurement decodes every image R times (R = 2 by default) in batches of
// B (32) and reports the best round.
#include <turbojpeg.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "magmadnn/data/image_folder.h"
#include "magmadnn/data/mnist.h"

using namespace magmadnn;
namespace fs = std::filesystem;

namespace {

// 28 x 28 grey -> S x S RGB, bilinear, tinted by class.
std::vector<std::uint8_t> upscale(const std::uint8_t* g, int side, int label, int noise, std::uint64_t& state) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(side * side * 3));
  const double tint[3] = {0.6 + 0.04 * label, 1.0 - 0.03 * label, 0.7 + 0.02 * (label % 5)};
  for (int y = 0; y < side; ++y) {
    const double sy = std::clamp((y + 0.5) * 28.0 / side - 0.5, 0.0, 27.0);
    const int y0 = std::min(static_cast<int>(sy), 26);
    const double fy = sy - y0;
    for (int x = 0; x < side; ++x) {
      const double sx = std::clamp((x + 0.5) * 28.0 / side - 0.5, 0.0, 27.0);
      const int x0 = std::min(static_cast<int>(sx), 26);
      const double fx = sx - x0;
      const double v = (g[y0 * 28 + x0] * (1 - fx) + g[y0 * 28 + x0 + 1] * fx) * (1 - fy) +
                       (g[(y0 + 1) * 28 + x0] * (1 - fx) + g[(y0 + 1) * 28 + x0 + 1] * fx) * fy;
      for (int c = 0; c < 3; ++c) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const int n = noise > 0 ? static_cast<int>((state >> 33) % static_cast<std::uint64_t>(2 * noise + 1)) - noise : 0;
        out[static_cast<std::size_t>((y * side + x) * 3 + c)] =
            static_cast<std::uint8_t>(std::clamp(v * tint[c] + n, 0.0, 255.0));
      }
    }
  }
  return out;
}

void write_split(const std::string& dir, data::dataset_type split, std::int64_t n, int side, int noise) {
  const data::SourceImageSet<float> set = data::load_mnist_source<float>(data::kFashionMnistDir, split);
  n = std::min(n, set.images.rows());
  tjhandle tj = tjInitCompress();
  std::uint64_t bytes = 0, state = 42;
  for (std::int64_t i = 0; i < n; ++i) {
    const int label = set.classes[static_cast<std::size_t>(i)];
    const auto px = upscale(set.images.byte_data() + i * 784, side, label, noise, state);
    unsigned char* buf = nullptr;
    unsigned long size = 0;
    if (tjCompress2(tj, px.data(), side, 0, side, TJPF_RGB, &buf, &size, TJSAMP_420, 90, 0) != 0) {
      std::fprintf(stderr, "tjCompress2: %s\n", tjGetErrorStr2(tj));
      std::exit(1);
    }
    const fs::path cls = fs::path(dir) / ("class" + std::to_string(label));
    fs::create_directories(cls);
    char name[32];
    std::snprintf(name, sizeof name, "%06lld.jpg", static_cast<long long>(i));
    std::ofstream(cls / name, std::ios::binary).write(reinterpret_cast<const char*>(buf), static_cast<std::streamsize>(size));
    bytes += size;
    tjFree(buf);
  }
  tjDestroy(tj);
  std::printf("wrote %lld JPEGs of %dx%d to %s (%.1f KiB each on average)\n", static_cast<long long>(n), side, side,
              dir.c_str(), static_cast<double>(bytes) / 1024.0 / static_cast<double>(std::max<std::int64_t>(n, 1)));
}

double images_per_second(const data::FolderIndex& idx, int threads, int side, std::int64_t batch, int rounds,
                         bool train) {
  data::ImageFolderOptions o;
  o.height = o.width = side;
  o.threads = threads;
  o.mean = {0.485, 0.456, 0.406};
  o.std = {0.229, 0.224, 0.225};
  const data::ImageFolderSource<float> src(idx, o);
  const std::int64_t n = src.size(), row = 3LL * side * side;
  std::vector<float> out(static_cast<std::size_t>(batch * row));
  double best = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::int64_t b = 0; b < n; b += batch) {
      const std::int64_t m = std::min(batch, n - b);
      std::vector<std::int64_t> ids(static_cast<std::size_t>(m));
      std::vector<data::SampleRng> rngs;
      for (std::int64_t i = 0; i < m; ++i) {
        ids[static_cast<std::size_t>(i)] = b + i;
        rngs.emplace_back(12345, static_cast<std::uint64_t>(r) << 40 | static_cast<std::uint64_t>(b + i));
      }
      src.fill(ids.data(), m, out.data(), train ? rngs.data() : nullptr);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(n) / s);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out = "/tmp/magmadnn_jpeg_folder", threads_arg = "1,2";
  std::int64_t images = 512, batch = 32;
  int side = 224, rounds = 2, noise = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--out") out = argv[i + 1];
    if (a == "--images") images = std::atoll(argv[i + 1]);
    if (a == "--side") side = std::atoi(argv[i + 1]);
    if (a == "--batch") batch = std::atoll(argv[i + 1]);
    if (a == "--threads") threads_arg = argv[i + 1];
    if (a == "--rounds") rounds = std::atoi(argv[i + 1]);
    if (a == "--noise") noise = std::atoi(argv[i + 1]);
  }
  if (!fs::exists(fs::path(out) / "train")) {
    write_split(out + "/train", data::Train, images, side, noise);
    write_split(out + "/test", data::Test, std::max<std::int64_t>(images / 8, 10), side, noise);
  }
  data::ImageFolderOptions scan;
  scan.height = scan.width = side;
  const data::FolderIndex idx = data::scan_image_folder(out + "/train", scan);
  std::printf("%zu images of %zu classes in %s/train, output %dx%dx3, batches of %lld, best of %d rounds\n",
              idx.files.size(), idx.classes.size(), out.c_str(), side, side, static_cast<long long>(batch), rounds);
  std::stringstream list(threads_arg);
  for (std::string t; std::getline(list, t, ',');) {
    const int threads = std::atoi(t.c_str());
    const double train = images_per_second(idx, threads, side, batch, rounds, true);
    const double eval = images_per_second(idx, threads, side, batch, rounds, false);
    std::printf("%d decode thread%s: %.0f images/s training form (random resized crop + flip), %.0f images/s "
                "evaluation form (centre crop)\n", threads, threads == 1 ? "" : "s", train, eval);
  }
  return 0;
}
