#include "magmadnn/data/image_folder.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "magmadnn/core/errors.h"

namespace magmadnn::data {
namespace fs = std::filesystem;

namespace {

// Runs f(i) for i in [0, count) on `threads` threads (the caller is one of
// them); the first exception thrown is rethrown once all have stopped.
template <typename F>
void parallel_items(std::int64_t count, int threads, F&& f) {
  std::atomic<std::int64_t> next{0};
  std::exception_ptr error;
  std::mutex mu;
  auto work = [&] {
    for (std::int64_t i = next++; i < count; i = next++) {
      try {
        f(i);
      } catch (...) {
        std::lock_guard lk(mu);
        if (!error) error = std::current_exception();
        next = count;
      }
    }
  };
  const int extra = static_cast<int>(std::min<std::int64_t>(threads, count)) - 1;
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(std::max(extra, 0)));
  for (int t = 0; t < extra; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

int hardware_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

bool hidden(const fs::path& p) { return !p.filename().empty() && p.filename().string()[0] == '.'; }

bool image_extension(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e == ".jpg" || e == ".jpeg" || e == ".png";
}

void check_options(const ImageFolderOptions& o) {
  MAGMADNN_CHECK(o.channels == 1 || o.channels == 3, ValueError,
                 "image folder: " << o.channels << " channels; images decode to 1 (grey) or 3 (RGB)");
  MAGMADNN_CHECK(o.height >= 1 && o.width >= 1 && o.height <= 65536 && o.width <= 65536, ValueError,
                 "image folder: sample size " << o.height << " x " << o.width << " outside [1, 65536]");
  for (const auto* v : {&o.mean, &o.std}) {
    MAGMADNN_CHECK(v->size() == 1 || v->size() == static_cast<std::size_t>(o.channels), ValueError,
                   "image folder: " << (v == &o.mean ? "mean" : "std") << " has " << v->size()
                                    << " values; give 1 or one per channel (" << o.channels << ")");
  }
  for (double s : o.std) MAGMADNN_CHECK(std::isfinite(s) && s > 0, ValueError, "image folder: std " << s << " <= 0");
  for (double m : o.mean) MAGMADNN_CHECK(std::isfinite(m), ValueError, "image folder: mean " << m << " is not finite");
  MAGMADNN_CHECK(o.min_scale > 0 && o.min_scale <= 1, ValueError, "image folder: min_scale " << o.min_scale << " outside (0, 1]");
  MAGMADNN_CHECK(o.center_crop > 0 && o.center_crop <= 1, ValueError,
                 "image folder: center_crop " << o.center_crop << " outside (0, 1]");
  MAGMADNN_CHECK(o.threads >= 0 && o.max_threads >= 0, ValueError,
                 "image folder: threads " << o.threads << ", max_threads " << o.max_threads);
}

// Reads as little as the header needs: the first 64 KiB, all of the file
// only when a JPEG's header lies further (large EXIF blocks).
void check_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ImageError(path, std::string("cannot be opened (") + std::strerror(errno) + ")");
  std::vector<std::uint8_t> head(1 << 16);
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  if (in.bad()) throw ImageError(path, std::string("cannot be read (") + std::strerror(errno) + ")");
  head.resize(static_cast<std::size_t>(in.gcount()));
  try {
    image_size(head.data(), head.size(), path);
  } catch (const ImageError&) {
    if (head.size() < (1u << 16)) throw;
    const std::vector<std::uint8_t> all = read_file_bytes(path);
    image_size(all.data(), all.size(), path);
  }
}

}  // namespace

std::vector<std::string> image_folder_classes(const std::string& root) {
  std::error_code ec;
  MAGMADNN_CHECK(fs::is_directory(root, ec), IOError, "image folder " << root << " is not a directory");
  std::vector<std::string> classes;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (!hidden(e.path()) && e.is_directory()) classes.push_back(e.path().filename().string());
  }
  MAGMADNN_CHECK(!ec, IOError, "image folder " << root << " cannot be listed (" << ec.message() << ")");
  std::sort(classes.begin(), classes.end());
  MAGMADNN_CHECK(!classes.empty(), IOError,
                 "image folder " << root << " has no class folders (expected " << root
                                 << "/<class>/<image>.jpg, one sub-folder per class)");
  return classes;
}

namespace {

// The candidate files of one class folder, sorted, with those of another
// extension set aside as bad.
std::vector<std::string> list_class(const fs::path& dir, std::vector<BadFile>& bad) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (hidden(e.path()) || e.is_directory()) continue;
    if (image_extension(e.path())) {
      files.push_back(e.path().string());
    } else {
      bad.push_back({e.path().string(), "not a .jpg, .jpeg or .png file"});
    }
  }
  MAGMADNN_CHECK(!ec, IOError, "class folder " << dir.string() << " cannot be listed (" << ec.message() << ")");
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

FolderIndex scan_image_folder(const std::string& root, const ImageFolderOptions& o) {
  check_options(o);
  MAGMADNN_CHECK(image_decoding_available(), NotSupportedError,
                 "image folder " << root << ": this magmadnn was built without JPEG and PNG decoding "
                                    "(libturbojpeg0-dev and libpng-dev were not found when it was configured; "
                                    "install them with tools/install-deps.sh, then configure and build again)");
  FolderIndex idx;
  idx.root = root;
  const std::vector<std::string> here = image_folder_classes(root);
  idx.classes = o.classes.empty() ? here : o.classes;
  std::vector<BadFile> bad;
  std::vector<std::vector<std::string>> per_class(here.size());
  std::vector<std::int64_t> label_of(here.size());
  for (std::size_t c = 0; c < here.size(); ++c) {
    const auto it = std::find(idx.classes.begin(), idx.classes.end(), here[c]);
    MAGMADNN_CHECK(it != idx.classes.end(), IOError,
                   "image folder " << root << ": class folder \"" << here[c]
                                   << "\" is not one of the training folder's classes");
    label_of[c] = it - idx.classes.begin();
    per_class[c] = list_class(fs::path(root) / here[c], bad);
    MAGMADNN_CHECK(!per_class[c].empty(), IOError,
                   "image folder " << root << ": class folder \"" << here[c] << "\" has no .jpg, .jpeg or .png images");
  }
  if (!bad.empty() && o.on_bad == BadImage::Refuse) throw ImageError(bad.front().file, bad.front().reason);
  // Every file's header (or, with verify, its data), on the hardware threads.
  std::vector<std::pair<std::string, std::int64_t>> all;
  for (std::size_t c = 0; c < here.size(); ++c)
    for (auto& f : per_class[c]) all.emplace_back(std::move(f), label_of[c]);
  std::vector<std::string> why(all.size());
  parallel_items(static_cast<std::int64_t>(all.size()), hardware_threads(), [&](std::int64_t i) {
    const std::string& f = all[static_cast<std::size_t>(i)].first;
    try {
      if (o.verify) {
        read_image(f, o.channels);
      } else {
        check_header(f);
      }
    } catch (const ImageError& e) {
      why[static_cast<std::size_t>(i)] = e.reason();
    }
  });
  std::vector<std::int64_t> kept_per_label(idx.classes.size(), 0);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!why[i].empty()) {
      if (o.on_bad == BadImage::Refuse) throw ImageError(all[i].first, why[i]);
      bad.push_back({all[i].first, why[i]});
      continue;
    }
    idx.files.push_back(std::move(all[i].first));
    idx.labels.push_back(all[i].second);
    ++kept_per_label[static_cast<std::size_t>(all[i].second)];
  }
  for (std::size_t c = 0; c < here.size(); ++c) {
    if (kept_per_label[static_cast<std::size_t>(label_of[c])] > 0) continue;
    const std::string dir = (fs::path(root) / here[c]).string() + "/";
    const auto first = std::find_if(bad.begin(), bad.end(), [&](const BadFile& f) { return f.file.rfind(dir, 0) == 0; });
    MAGMADNN_THROW(IOError, "image folder " << root << ": class folder \"" << here[c] << "\" has no readable image ("
                                            << (first != bad.end() ? first->file + ": " + first->reason : std::string())
                                            << (bad.size() > 1 ? ", and more" : "") << ")");
  }
  idx.skipped = std::move(bad);
  return idx;
}

// ---------------------------------------------------------------------------
// Preparing one image.

namespace {

struct Box {
  double x0 = 0, y0 = 0, w = 0, h = 0;  // in source pixels
};

Box center_box(double h, double w, double out_h, double out_w, double frac) {
  // The output's aspect ratio, its shorter side frac x the image's shorter
  // side, shrunk to fit inside the image.
  double g = frac * std::min(h, w) / std::min(out_h, out_w);
  g = std::min({g, h / out_h, w / out_w});
  const double bh = out_h * g, bw = out_w * g;
  return {(w - bw) / 2, (h - bh) / 2, bw, bh};
}

Box random_box(std::int64_t h, std::int64_t w, double min_scale, SampleRng& rng) {
  const double area = static_cast<double>(h) * static_cast<double>(w);
  const double lo = std::log(3.0 / 4.0), hi = std::log(4.0 / 3.0);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * (min_scale + (1.0 - min_scale) * rng.uniform());
    const double aspect = std::exp(lo + (hi - lo) * rng.uniform());
    const auto cw = static_cast<std::int64_t>(std::lround(std::sqrt(target * aspect)));
    const auto ch = static_cast<std::int64_t>(std::lround(std::sqrt(target / aspect)));
    if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
      const auto top = static_cast<std::int64_t>(rng.uniform_int(static_cast<std::uint64_t>(h - ch + 1)));
      const auto left = static_cast<std::int64_t>(rng.uniform_int(static_cast<std::uint64_t>(w - cw + 1)));
      return {static_cast<double>(left), static_cast<double>(top), static_cast<double>(cw), static_cast<double>(ch)};
    }
  }
  // Fallback: the whole image, its ratio clamped to [3/4, 4/3], centred.
  double cw = static_cast<double>(w), ch = static_cast<double>(h);
  if (cw / ch < 3.0 / 4.0) {
    ch = std::round(cw * 4.0 / 3.0);
  } else if (cw / ch > 4.0 / 3.0) {
    cw = std::round(ch * 4.0 / 3.0);
  }
  return {(static_cast<double>(w) - cw) / 2, (static_cast<double>(h) - ch) / 2, cw, ch};
}

// Source index and weight of the upper neighbour for each of n output
// positions covering [start, start + length) of a source axis of size src.
struct Taps {
  std::vector<std::int64_t> lo;
  std::vector<float> frac;
};
Taps taps(double start, double length, std::int64_t n, std::int64_t src) {
  Taps t;
  t.lo.resize(static_cast<std::size_t>(n));
  t.frac.resize(static_cast<std::size_t>(n));
  const double step = length / static_cast<double>(n);
  for (std::int64_t i = 0; i < n; ++i) {
    double s = start + (static_cast<double>(i) + 0.5) * step - 0.5;
    s = std::clamp(s, 0.0, static_cast<double>(src - 1));
    const auto lo = std::min(static_cast<std::int64_t>(s), std::max<std::int64_t>(src - 2, 0));
    t.lo[static_cast<std::size_t>(i)] = lo;
    t.frac[static_cast<std::size_t>(i)] = src > 1 ? static_cast<float>(s - static_cast<double>(lo)) : 0.0f;
  }
  return t;
}

}  // namespace

namespace {

// Source row `row` resampled horizontally: W x C floats, interleaved.
template <int C>
void resample_row(const std::uint8_t* row, const Taps& tx, std::int64_t x_next, float* out) {
  const auto w = static_cast<std::int64_t>(tx.lo.size());
  for (std::int64_t x = 0; x < w; ++x) {
    const std::uint8_t* p = row + tx.lo[static_cast<std::size_t>(x)] * C;
    const float f = tx.frac[static_cast<std::size_t>(x)];
    for (int c = 0; c < C; ++c)
      out[x * C + c] = static_cast<float>(p[c]) * (1.0f - f) + static_cast<float>(p[c + x_next]) * f;
  }
}

// Separable bilinear resize of the box ty x tx, then (p / 255 - mean) x
// (1 / std) per channel, written planar (mirrored when `flip`). Each source
// row is resampled once however many output rows use it.
template <int C, typename T>
void resize_normalise(const Image8& img, const Taps& ty, const Taps& tx, const float* mean, const float* inv, bool flip,
                      T* dst) {
  const auto H = static_cast<std::int64_t>(ty.lo.size()), W = static_cast<std::int64_t>(tx.lo.size());
  const std::int64_t stride = img.width * C, x_next = img.width > 1 ? C : 0;
  std::vector<float> buf(static_cast<std::size_t>(2 * W * C));
  float* rows[2] = {buf.data(), buf.data() + W * C};
  std::int64_t have[2] = {-1, -1};
  auto row = [&](std::int64_t r, int slot) {
    if (have[slot] == r) return;
    if (have[1 - slot] == r) {
      std::swap(rows[0], rows[1]);
      std::swap(have[0], have[1]);
      if (have[slot] == r) return;
    }
    resample_row<C>(img.pixels.data() + r * stride, tx, x_next, rows[slot]);
    have[slot] = r;
  };
  for (std::int64_t y = 0; y < H; ++y) {
    const std::int64_t lo = ty.lo[static_cast<std::size_t>(y)];
    row(lo, 0);
    row(std::min(lo + 1, img.height - 1), 1);
    const float fy = ty.frac[static_cast<std::size_t>(y)];
    for (int c = 0; c < C; ++c) {
      T* out = dst + (static_cast<std::int64_t>(c) * H + y) * W;
      const float* a = rows[0] + c;
      const float* b = rows[1] + c;
      for (std::int64_t x = 0; x < W; ++x) {
        const float v = a[x * C] * (1.0f - fy) + b[x * C] * fy;
        out[flip ? W - 1 - x : x] = static_cast<T>((v * (1.0f / 255.0f) - mean[c]) * inv[c]);
      }
    }
  }
}

}  // namespace

template <typename T>
void prepare_image(const Image8& img, const ImageFolderOptions& o, SampleRng* rng, T* dst) {
  MAGMADNN_CHECK(img.channels == o.channels, ValueError,
                 "prepare_image: an image of " << img.channels << " channels for samples of " << o.channels);
  const bool random = rng != nullptr && o.augment;
  const Box b = random ? random_box(img.height, img.width, o.min_scale, *rng)
                       : center_box(static_cast<double>(img.height), static_cast<double>(img.width),
                                    static_cast<double>(o.height), static_cast<double>(o.width), o.center_crop);
  const bool flip = random && rng->bernoulli(0.5);
  const Taps ty = taps(b.y0, b.h, o.height, img.height), tx = taps(b.x0, b.w, o.width, img.width);
  float mean[3], inv[3];
  for (int c = 0; c < o.channels; ++c) {
    mean[c] = static_cast<float>(o.mean.size() == 1 ? o.mean[0] : o.mean[static_cast<std::size_t>(c)]);
    inv[c] = static_cast<float>(1.0 / (o.std.size() == 1 ? o.std[0] : o.std[static_cast<std::size_t>(c)]));
  }
  if (o.channels == 3) {
    resize_normalise<3>(img, ty, tx, mean, inv, flip, dst);
  } else {
    resize_normalise<1>(img, ty, tx, mean, inv, flip, dst);
  }
}

// ---------------------------------------------------------------------------
// The source.

template <typename T>
struct ImageFolderSource<T>::State {
  mutable std::mutex mu;
  std::vector<BadFile> failures;
  std::set<std::string> failed;
  std::int64_t blank = 0;
  // Tuning: candidates tried in turn, kTrial batches each after a warm-up.
  std::vector<int> candidates;
  std::size_t current = 0;
  int batches_in_trial = 0;
  bool warmed = false;
  double trial_images = 0, trial_seconds = 0;
  DecodeTuning tuning;
};

namespace {
constexpr int kTrialBatches = 2;
}

template <typename T>
ImageFolderSource<T>::ImageFolderSource(FolderIndex index, ImageFolderOptions o)
    : index_(std::move(index)), opts_(std::move(o)), state_(std::make_unique<State>()) {
  check_options(opts_);
  MAGMADNN_CHECK(index_.files.size() == index_.labels.size(), ValueError,
                 "ImageFolderSource: " << index_.files.size() << " files but " << index_.labels.size() << " labels");
  State& s = *state_;
  if (opts_.threads > 0) {
    s.tuning.threads = opts_.threads;
    return;
  }
  const int most = opts_.max_threads > 0 ? opts_.max_threads : hardware_threads();
  for (int t = 1; t <= most; t *= 2) s.candidates.push_back(t);
  if (s.candidates.back() != most) s.candidates.push_back(most);
  s.tuning.threads = s.candidates.front();
  if (s.candidates.size() == 1) s.tuning.tuned = true;
}

template <typename T>
ImageFolderSource<T>::~ImageFolderSource() = default;

template <typename T>
void ImageFolderSource<T>::fill_row(std::int64_t id, T* dst, SampleRng* rng) const {
  MAGMADNN_CHECK(id >= 0 && id < size(), IndexError, "ImageFolderSource: sample " << id << " outside [0, " << size() << ")");
  const std::string& file = index_.files[static_cast<std::size_t>(id)];
  const std::int64_t row = opts_.channels * opts_.height * opts_.width;
  try {
    const Image8 img = read_image(file, opts_.channels);
    prepare_image(img, opts_, rng, dst);
  } catch (const ImageError& e) {
    if (opts_.on_bad == BadImage::Refuse) throw;
    std::fill(dst, dst + row, T(0));
    std::lock_guard lk(state_->mu);
    ++state_->blank;
    if (state_->failed.insert(file).second) state_->failures.push_back({file, e.reason()});
  }
}

template <typename T>
void ImageFolderSource<T>::fill(const std::int64_t* ids, std::int64_t count, T* dst, SampleRng* rngs) const {
  State& s = *state_;
  int threads = 0;
  bool measure = false;
  {
    std::lock_guard lk(s.mu);
    threads = s.tuning.threads;
    measure = !s.tuning.tuned && opts_.threads == 0 && s.warmed;
    s.warmed = true;
  }
  const std::int64_t row = opts_.channels * opts_.height * opts_.width;
  const auto t0 = std::chrono::steady_clock::now();
  parallel_items(count, threads, [&](std::int64_t i) { fill_row(ids[i], dst + i * row, rngs ? rngs + i : nullptr); });
  if (!measure) return;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard lk(s.mu);
  if (s.tuning.tuned || s.candidates[s.current] != threads) return;  // another batch moved the trial on
  s.trial_images += static_cast<double>(count);
  s.trial_seconds += seconds;
  if (++s.batches_in_trial < kTrialBatches) return;
  s.tuning.measured.emplace_back(threads, s.trial_seconds > 0 ? s.trial_images / s.trial_seconds : 0.0);
  s.batches_in_trial = 0;
  s.trial_images = s.trial_seconds = 0;
  if (++s.current < s.candidates.size()) {
    s.tuning.threads = s.candidates[s.current];
    return;
  }
  // The fastest; a larger count only when at least 5% faster than the best so far.
  std::pair<int, double> best = s.tuning.measured.front();
  for (const auto& m : s.tuning.measured)
    if (m.second > best.second * 1.05) best = m;
  s.tuning.threads = best.first;
  s.tuning.tuned = true;
}

template <typename T>
std::vector<BadFile> ImageFolderSource<T>::decode_failures() const {
  std::lock_guard lk(state_->mu);
  return state_->failures;
}

template <typename T>
std::int64_t ImageFolderSource<T>::blank_rows() const {
  std::lock_guard lk(state_->mu);
  return state_->blank;
}

template <typename T>
DecodeTuning ImageFolderSource<T>::tuning() const {
  std::lock_guard lk(state_->mu);
  return state_->tuning;
}

template <typename T>
Samples<T> image_folder_samples(std::shared_ptr<const ImageFolderSource<T>> source) {
  MAGMADNN_CHECK(source != nullptr, ValueError, "image_folder_samples: no source");
  std::vector<std::int64_t> shape{source->size()};
  for (auto d : source->sample_shape()) shape.push_back(d);
  return Samples<T>::from_source(Shape(shape), std::move(source));
}

template void prepare_image<float>(const Image8&, const ImageFolderOptions&, SampleRng*, float*);
template void prepare_image<double>(const Image8&, const ImageFolderOptions&, SampleRng*, double*);
template class ImageFolderSource<float>;
template class ImageFolderSource<double>;
template Samples<float> image_folder_samples(std::shared_ptr<const ImageFolderSource<float>>);
template Samples<double> image_folder_samples(std::shared_ptr<const ImageFolderSource<double>>);

}  // namespace magmadnn::data
