// Image folders: decoding JPEG and PNG (values checked against the pixels
// written), labels by folder, the prepared rows, determinism over decode
// threads, every kind of bad file, and a training run from a folder config.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include <unistd.h>

#include "magmadnn/core/config.h"
#include "magmadnn/data/dataloader.h"
#include "magmadnn/data/image_folder.h"
#include "magmadnn/run/run_training.h"

#if MAGMADNN_HAVE_IMAGES
#include "data/image_files.h"
#else
#include "data/temp_dir.h"
#endif

using namespace magmadnn;
using namespace magmadnn::data;
using magmadnn::test::TempDir;
namespace fs = std::filesystem;

#if !MAGMADNN_HAVE_IMAGES

TEST(ImageFolder, ABuildWithoutTheLibrariesSaysWhatToInstall) {
  TempDir d;
  EXPECT_THROW_WITH(scan_image_folder(d.str(), {}), NotSupportedError, "libturbojpeg0-dev", "tools/install-deps.sh");
}

#else

namespace {

using test::pattern;
using test::write_jpeg;
using test::write_png;

// The channel conversion the decoder promises, written out.
std::vector<std::uint8_t> expected(const std::vector<std::uint8_t>& px, int from, int to) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i < px.size(); i += static_cast<std::size_t>(from)) {
    const std::uint8_t* s = &px[i];
    if (to == 1) {
      out.push_back(from >= 3 ? static_cast<std::uint8_t>((299 * s[0] + 587 * s[1] + 114 * s[2] + 500) / 1000) : s[0]);
    } else {
      for (int c = 0; c < 3; ++c) out.push_back(from >= 3 ? s[c] : s[0]);
    }
  }
  return out;
}

// root/<class>/<i>.<ext>: `per_class` images of w x h per class.
void write_folder(const std::string& root, const std::vector<std::string>& classes, int per_class, int w, int h,
                  bool jpeg = true) {
  int seed = 0;
  for (const auto& c : classes) {
    fs::create_directories(fs::path(root) / c);
    for (int i = 0; i < per_class; ++i, ++seed) {
      const std::string f = (fs::path(root) / c / ("img" + std::to_string(i))).string();
      if (jpeg) {
        write_jpeg(f + ".jpg", w, h, 3, pattern(w, h, 3, seed));
      } else {
        write_png(f + ".png", w, h, 3, pattern(w, h, 3, seed));
      }
    }
  }
}

ImageFolderOptions small(int channels = 3, std::int64_t side = 8) {
  ImageFolderOptions o;
  o.channels = channels;
  o.height = o.width = side;
  return o;
}

std::vector<float> rows_of(const ImageFolderSource<float>& src, const std::vector<std::int64_t>& ids,
                           SampleRng* rngs = nullptr) {
  const std::int64_t row = src.options().channels * src.options().height * src.options().width;
  std::vector<float> out(ids.size() * static_cast<std::size_t>(row));
  src.fill(ids.data(), static_cast<std::int64_t>(ids.size()), out.data(), rngs);
  return out;
}

}  // namespace

TEST(ImageDecode, PngPixelsComeBackExactlyInEveryChannelLayout) {
  TempDir d;
  const int w = 5, h = 3;
  for (int from = 1; from <= 4; ++from) {
    std::vector<std::uint8_t> px(static_cast<std::size_t>(w * h * from));
    for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<std::uint8_t>(i * 37 + from * 11);
    const std::string f = d.file("p" + std::to_string(from) + ".png");
    write_png(f, w, h, from, px);
    for (int to : {1, 3}) {
      const Image8 img = read_image(f, to);
      EXPECT_EQ(img.width, w);
      EXPECT_EQ(img.height, h);
      EXPECT_EQ(img.channels, to);
      EXPECT_EQ(img.pixels, expected(px, from, to)) << from << " -> " << to << " channels";
    }
  }
}

TEST(ImageDecode, JpegPixelsComeBackWithinTolerance) {
  TempDir d;
  const int w = 16, h = 12;
  for (int from : {1, 3}) {
    const auto px = pattern(w, h, from, 3);
    const std::string f = d.file("j" + std::to_string(from) + ".jpg");
    write_jpeg(f, w, h, from, px, 100);
    for (int to : {1, 3}) {
      const Image8 img = read_image(f, to);
      ASSERT_EQ(img.pixels.size(), static_cast<std::size_t>(w * h * to));
      const auto want = expected(px, from, to);
      int worst = 0;
      for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(img.pixels[i] - want[i]));
      EXPECT_LE(worst, 4) << from << " -> " << to << " channels";
    }
  }
}

TEST(ImageDecode, TheFormatIsToldByContentNotByName) {
  TempDir d;
  const auto px = pattern(4, 4, 3, 1);
  write_png(d.file("really_a_png.jpg"), 4, 4, 3, px);
  EXPECT_EQ(read_image(d.file("really_a_png.jpg"), 3).pixels, px);
}

TEST(ImageDecode, EachKindOfBadBytesIsNamedWithItsReason) {
  TempDir d;
  const auto jpeg = test::jpeg_bytes(32, 32, 3, pattern(32, 32, 3, 2));
  const std::vector<std::uint8_t> truncated(jpeg.begin(), jpeg.begin() + static_cast<long>(jpeg.size() / 2));
  EXPECT_THROW_WITH(decode_image(truncated.data(), truncated.size(), 3, "t.jpg"), ImageError, "t.jpg: ",
                    "corrupt or truncated JPEG data");
  const std::string text = "hello, not an image";
  EXPECT_THROW_WITH(decode_image(reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), 3, "x.png"),
                    ImageError, "x.png: not a JPEG or PNG image");
  EXPECT_THROW_WITH(decode_image(nullptr, 0, 3, "z.jpg"), ImageError, "z.jpg: zero bytes");
  EXPECT_THROW_WITH(read_image(d.file("missing.jpg"), 3), ImageError, "missing.jpg: cannot be opened");
  std::vector<std::uint8_t> bad_header = jpeg;
  bad_header.resize(4);
  EXPECT_THROW_WITH(decode_image(bad_header.data(), bad_header.size(), 3, "h.jpg"), ImageError, "corrupt JPEG header");
  EXPECT_THROW_WITH(decode_image(jpeg.data(), jpeg.size(), 2, "c.jpg"), ValueError, "2 channels");
}

TEST(ImageFolder, ClassesAreSortedSubFoldersAndLabelsFollowThem) {
  TempDir d;
  write_folder(d.str(), {"zebra", "ant", "moth"}, 2, 6, 5);
  test::write_text(d.file("ant/.hidden.jpg"), "ignored");
  fs::create_directories(d.file(".cache"));
  const FolderIndex idx = scan_image_folder(d.str(), small());
  EXPECT_EQ(idx.classes, (std::vector<std::string>{"ant", "moth", "zebra"}));
  ASSERT_EQ(idx.files.size(), 6u);
  EXPECT_EQ(idx.labels, (std::vector<std::int64_t>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(fs::path(idx.files[0]).filename(), "img0.jpg");
  EXPECT_EQ(fs::path(idx.files[2]).parent_path().filename(), "moth");
  EXPECT_TRUE(idx.skipped.empty());
  // A test folder is labelled by the training folder's classes.
  TempDir t;
  write_folder(t.str(), {"zebra"}, 1, 6, 5);
  ImageFolderOptions o = small();
  o.classes = idx.classes;
  EXPECT_EQ(scan_image_folder(t.str(), o).labels, (std::vector<std::int64_t>{2}));
  TempDir u;
  write_folder(u.str(), {"cat"}, 1, 6, 5);
  EXPECT_THROW_WITH(scan_image_folder(u.str(), o), IOError, "\"cat\" is not one of the training folder's classes");
}

TEST(ImageFolder, EvaluationRowsOfAnImageOfTheSampleSizeAreItsPixelsNormalised) {
  TempDir d;
  fs::create_directories(d.file("a"));
  const auto px = pattern(8, 8, 3, 5);
  write_png(d.file("a/x.png"), 8, 8, 3, px);
  ImageFolderOptions o = small();
  o.center_crop = 1.0;
  o.mean = {0.5, 0.25, 0.0};
  o.std = {0.5, 2.0, 1.0};
  auto src = std::make_shared<ImageFolderSource<float>>(scan_image_folder(d.str(), o), o);
  const std::vector<float> row = rows_of(*src, {0});
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 64; ++i) {
      const float want = static_cast<float>((px[static_cast<std::size_t>(i * 3 + c)] / 255.0 - o.mean[c]) / o.std[c]);
      ASSERT_NEAR(row[static_cast<std::size_t>(c * 64 + i)], want, 1e-6) << "channel " << c << " pixel " << i;
    }
  // Samples {N, C, H, W} over the source.
  const Samples<float> s = image_folder_samples<float>(src);
  EXPECT_EQ(s.shape(), Shape({1, 3, 8, 8}));
  EXPECT_TRUE(s.is_generated());
  EXPECT_EQ(s.to_tensor().to_vector(), row);
}

TEST(ImageFolder, CentreCropAndRandomCropResizeLargerImages) {
  TempDir d;
  fs::create_directories(d.file("a"));
  // Left half black, right half white: the centre crop keeps both halves.
  std::vector<std::uint8_t> px(40 * 20, 0);
  for (int y = 0; y < 20; ++y)
    for (int x = 20; x < 40; ++x) px[static_cast<std::size_t>(y * 40 + x)] = 255;
  write_png(d.file("a/x.png"), 40, 20, 1, px);
  ImageFolderOptions o = small(1, 4);
  o.center_crop = 1.0;
  auto src = std::make_shared<ImageFolderSource<float>>(scan_image_folder(d.str(), o), o);
  const std::vector<float> row = rows_of(*src, {0});
  EXPECT_EQ(row[0], 0.0f);
  EXPECT_EQ(row[3], 1.0f);
  // Random crops differ with the generator and repeat with the same one.
  std::vector<std::vector<float>> seen;
  for (std::uint64_t k = 0; k < 8; ++k) {
    SampleRng a(7, k), b(7, k);
    const auto ra = rows_of(*src, {0}, &a);
    EXPECT_EQ(ra, rows_of(*src, {0}, &b));
    seen.push_back(ra);
  }
  EXPECT_TRUE(std::any_of(seen.begin(), seen.end(), [&](const auto& r) { return r != seen[0]; }));
}

TEST(ImageFolder, TheLoaderServesTheSameBatchesWithAnyDecodeThreadCount) {
  TempDir d;
  write_folder(d.str(), {"a", "b", "c"}, 4, 20, 14);
  const Tensor<float> y({12, 1}, {ZERO}, HOST);
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 2, 3, 0}) {
    ImageFolderOptions o = small();
    o.threads = threads;
    o.max_threads = 3;
    auto src = std::make_shared<ImageFolderSource<float>>(scan_image_folder(d.str(), o), o);
    LoaderOptions lo;
    lo.batch_size = 5;
    lo.workers = 2;
    lo.seed = 99;
    DataLoader<float> loader(image_folder_samples<float>(src), y, lo);
    std::vector<float> all;
    for (int epoch = 0; epoch < 4; ++epoch) {
      loader.start_epoch(epoch);
      Batch<float> b;
      while (loader.next(b)) {
        const auto v = b.x.to_vector();
        all.insert(all.end(), v.begin(), v.end());
      }
    }
    runs.push_back(all);
    if (threads == 0) {
      const DecodeTuning t = src->tuning();  // 12 batches: warm-up, then 2 each for 1, 2 and 3 threads
      EXPECT_TRUE(t.tuned);
      ASSERT_EQ(t.measured.size(), 3u);
      EXPECT_EQ(t.measured[0].first, 1);
      EXPECT_EQ(t.measured[2].first, 3);
      EXPECT_GT(t.measured[0].second, 0.0);
    }
  }
  for (std::size_t r = 1; r < runs.size(); ++r) EXPECT_EQ(runs[r], runs[0]) << "run " << r;
  // Augmented: an epoch's rows are not the next epoch's.
  const std::size_t epoch = runs[0].size() / 4;
  EXPECT_NE(std::vector<float>(runs[0].begin(), runs[0].begin() + static_cast<long>(epoch)),
            std::vector<float>(runs[0].begin() + static_cast<long>(epoch), runs[0].begin() + 2 * static_cast<long>(epoch)));
}

namespace {

// One good image per class plus every kind of bad file in class "a".
struct BadFolder {
  TempDir d;
  std::string truncated, text, gif, empty, dangling;
  BadFolder() {
    write_folder(d.str(), {"a", "b"}, 2, 12, 12);
    const auto jpeg = test::jpeg_bytes(32, 32, 3, pattern(32, 32, 3, 9));
    truncated = d.file("a/truncated.jpg");
    test::write_bytes(truncated, std::vector<unsigned char>(jpeg.begin(), jpeg.begin() + static_cast<long>(jpeg.size() * 2 / 3)));
    text = d.file("a/notes.jpeg");
    test::write_text(text, "not an image at all");
    gif = d.file("a/anim.gif");
    test::write_text(gif, "GIF89a");
    empty = d.file("a/empty.png");
    test::write_text(empty, "");
    dangling = d.file("a/gone.jpg");
    fs::create_symlink(d.file("nowhere.jpg"), dangling);
  }
};

std::string reason_of(const std::vector<BadFile>& bad, const std::string& file) {
  for (const auto& b : bad)
    if (b.file == file) return b.reason;
  return "(not listed)";
}

}  // namespace

TEST(ImageFolder, BadFilesAreNamedAndSkippedWithTheirReasons) {
  BadFolder f;
  ImageFolderOptions o = small();
  const FolderIndex idx = scan_image_folder(f.d.str(), o);
  EXPECT_EQ(idx.skipped.size(), 4u);
  EXPECT_EQ(reason_of(idx.skipped, f.gif), "not a .jpg, .jpeg or .png file");
  EXPECT_NE(reason_of(idx.skipped, f.text).find("not a JPEG or PNG image"), std::string::npos);
  EXPECT_EQ(reason_of(idx.skipped, f.empty), "zero bytes (an empty file)");
  EXPECT_NE(reason_of(idx.skipped, f.dangling).find("cannot be opened"), std::string::npos);
  // The truncated JPEG has a whole header: the scan keeps it, and the batch
  // that decodes it serves a blank row and names it, once.
  ASSERT_EQ(idx.files.size(), 5u);
  const auto it = std::find(idx.files.begin(), idx.files.end(), f.truncated);
  ASSERT_NE(it, idx.files.end());
  const std::int64_t id = it - idx.files.begin();
  auto src = std::make_shared<ImageFolderSource<float>>(idx, o);
  for (int k = 0; k < 2; ++k) {
    const std::vector<float> row = rows_of(*src, {id});
    EXPECT_TRUE(std::all_of(row.begin(), row.end(), [](float v) { return v == 0.0f; }));
  }
  ASSERT_EQ(src->decode_failures().size(), 1u);
  EXPECT_EQ(src->decode_failures()[0].file, f.truncated);
  EXPECT_NE(src->decode_failures()[0].reason.find("corrupt or truncated JPEG data"), std::string::npos);
  EXPECT_EQ(src->blank_rows(), 2);
  // verify decodes every file at the scan, so the truncated one is left out there.
  o.verify = true;
  const FolderIndex checked = scan_image_folder(f.d.str(), o);
  EXPECT_EQ(checked.files.size(), 4u);
  EXPECT_NE(reason_of(checked.skipped, f.truncated).find("truncated"), std::string::npos);
}

TEST(ImageFolder, UnreadablePermissionsAreNamed) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their permissions (the dangling link covers it)";
  TempDir d;
  write_folder(d.str(), {"a"}, 2, 8, 8);
  fs::permissions(d.file("a/img1.jpg"), fs::perms::none);
  const FolderIndex idx = scan_image_folder(d.str(), small());
  ASSERT_EQ(idx.skipped.size(), 1u);
  EXPECT_NE(idx.skipped[0].reason.find("cannot be opened"), std::string::npos);
}

TEST(ImageFolder, RefuseStopsAtTheFirstBadFileNamingIt) {
  ImageFolderOptions o = small();
  o.on_bad = BadImage::Refuse;
  {
    BadFolder f;
    EXPECT_THROW_WITH(scan_image_folder(f.d.str(), o), ImageError, f.gif + ": not a .jpg, .jpeg or .png file");
  }
  // Each other kind alone: refused with its file and reason.
  for (int keep = 0; keep < 3; ++keep) {
    BadFolder f;
    const std::vector<std::pair<std::string*, std::string>> kinds = {
        {&f.text, "not a JPEG or PNG image"}, {&f.empty, "zero bytes"}, {&f.dangling, "cannot be opened"}};
    for (const std::string* p : {&f.gif, &f.text, &f.empty, &f.dangling, &f.truncated})
      if (p != kinds[static_cast<std::size_t>(keep)].first) fs::remove(*p);
    EXPECT_THROW_WITH(scan_image_folder(f.d.str(), o), ImageError,
                      *kinds[static_cast<std::size_t>(keep)].first + ": " + kinds[static_cast<std::size_t>(keep)].second);
  }
  // The truncated JPEG passes the header scan and fails in the batch: the
  // loader rethrows the error naming it.
  BadFolder f;
  for (const std::string* p : {&f.gif, &f.text, &f.empty, &f.dangling}) fs::remove(*p);
  auto src = std::make_shared<ImageFolderSource<float>>(scan_image_folder(f.d.str(), o), o);
  LoaderOptions lo;
  lo.batch_size = 5;
  lo.shuffle = false;
  DataLoader<float> loader(image_folder_samples<float>(src), Tensor<float>({5, 1}, {ZERO}, HOST), lo);
  Batch<float> b;
  EXPECT_THROW_WITH(loader.next(b), ImageError, f.truncated + ": corrupt or truncated JPEG data");
}

TEST(ImageFolder, EmptyFoldersAreClearErrors) {
  TempDir d;
  EXPECT_THROW_WITH(scan_image_folder(d.file("nope"), small()), IOError, "nope is not a directory");
  EXPECT_THROW_WITH(scan_image_folder(d.str(), small()), IOError, "has no class folders");
  write_folder(d.str(), {"a"}, 1, 8, 8);
  fs::create_directories(d.file("b"));
  EXPECT_THROW_WITH(scan_image_folder(d.str(), small()), IOError, "class folder \"b\" has no .jpg, .jpeg or .png images");
  test::write_text(d.file("b/bad.png"), "x");
  EXPECT_THROW_WITH(scan_image_folder(d.str(), small()), IOError, "class folder \"b\" has no readable image",
                    "bad.png: not a JPEG or PNG image");
  ImageFolderOptions o = small();
  o.channels = 4;
  EXPECT_THROW_WITH(scan_image_folder(d.str(), o), ValueError, "4 channels");
}

// ---------------------------------------------------------------------------
// The run spec.

namespace {

run::Json folder_config(const std::string& train, const std::string& test) {
  return {{"name", "folder"},
          {"layers", run::Json::array({{{"type", "conv2d"}, {"filters", 4}, {"kernel", 3}, {"activation", "relu"}},
                                       {{"type", "flatten"}},
                                       {{"type", "dense"}, {"units", 2}, {"activation", "softmax"}}})},
          {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.05}}},
          {"epochs", 2},
          {"batch_size", 4},
          {"data",
           {{"dataset", "folder"}, {"train", train}, {"test", test}, {"shape", {3, 8, 8}}, {"val_split", 0.25},
            {"mean", {0.5, 0.5, 0.5}}, {"std", 0.25}}}};
}

std::string config_error(const run::Json& j) {
  try {
    run::parse_config(j);
  } catch (const run::ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(ImageFolderConfig, KeysAreReadWrittenAndChecked) {
  run::Json j = folder_config("/tmp/tr", "/tmp/te");
  const run::TrainSpec s = run::parse_config(j);
  EXPECT_EQ(s.data.train_dir, "/tmp/tr");
  EXPECT_EQ(s.data.test_dir, "/tmp/te");
  EXPECT_EQ(s.data.mean, (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(s.data.std, (std::vector<double>{0.25}));
  EXPECT_EQ(s.data.on_error, "skip");
  EXPECT_EQ(run::parse_config(run::to_json(s)), s);
  EXPECT_FALSE(run::to_json(s)["data"].contains("dir"));

  auto with = [&](const char* key, const run::Json& v) {
    run::Json k = j;
    k["data"][key] = v;
    return config_error(k);
  };
  EXPECT_NE(with("shape", {2, 8, 8}).find("data.shape: expected [C, H, W] with C 1 (grey) or 3 (RGB)"), std::string::npos);
  EXPECT_NE(with("mean", {1, 2}).find("data.mean: expected a number or an array of 1 or 3"), std::string::npos);
  EXPECT_NE(with("std", 0).find("data.std: expected a positive number"), std::string::npos);
  EXPECT_NE(with("on_error", "ignore").find("data.on_error: expected one of \"skip\", \"refuse\""), std::string::npos);
  EXPECT_NE(with("dir", "/x").find("data.dir: \"dataset\": \"folder\" reads the folders"), std::string::npos);
  EXPECT_NE(with("decode_threads", -1).find("data.decode_threads: expected an integer in [0, 256]"), std::string::npos);
  EXPECT_NE(with("classes", 3).find("data.classes: only \"dataset\": \"synthetic\" takes it"), std::string::npos);
  run::Json m = j;
  m["data"].erase("test");
  EXPECT_NE(config_error(m).find("data.test: missing"), std::string::npos) << config_error(m);
  run::Json n = j;
  n["data"]["mean"] = {0.1, 0.2, 0.3};
  n["data"]["shape"] = {1, 8, 8};
  EXPECT_NE(config_error(n).find("data.mean: 3 values for images of 1 channel"), std::string::npos) << config_error(n);
  run::Json other = j;
  other["data"] = {{"dataset", "synthetic"}, {"train", "/x"}};
  EXPECT_NE(config_error(other).find("data.train: only \"dataset\": \"folder\" takes it"), std::string::npos)
      << config_error(other);
}

TEST(ImageFolderConfig, ATrainingRunReadsFoldersAndReportsTheDecodeThreads) {
  TempDir tr, te;
  write_folder(tr.str(), {"dark", "light"}, 8, 12, 10);
  write_folder(te.str(), {"dark", "light"}, 2, 12, 10, /*jpeg=*/false);
  test::write_text(tr.file("dark/broken.jpg"), "broken");
  const run::TrainSpec spec = run::parse_config(folder_config(tr.str(), te.str()));
  run::TrainingRun run(spec);
  EXPECT_EQ(run.train().x.shape()[0] + run.validation().x.shape()[0], 16);
  EXPECT_EQ(run.test().x.shape(), Shape({4, 3, 8, 8}));
  std::ostringstream log;
  run::RunOptions ro;
  ro.log = &log;
  const run::RunResult r = run.run(ro);
  EXPECT_EQ(r.history.size(), 2u);
  EXPECT_TRUE(std::isfinite(r.test.loss));
  EXPECT_EQ(r.test.samples, 4);
  const auto& f = r.summary["image_folder"]["train"];
  EXPECT_EQ(f["images"], 16);
  EXPECT_EQ(f["skipped_files"], 1);
  EXPECT_EQ(f["skipped"][0]["file"], tr.file("dark/broken.jpg"));
  EXPECT_GE(f["decode_threads"].get<int>(), 1);
  EXPECT_NE(log.str().find("image folder " + tr.str() + " (train): 16 images of 2 classes, 1 bad files skipped"),
            std::string::npos) << log.str();
  EXPECT_NE(log.str().find("skipped " + tr.file("dark/broken.jpg") + ": not a JPEG or PNG image"), std::string::npos);
  EXPECT_NE(log.str().find("decode thread"), std::string::npos) << log.str();
  // The same seed trains the same run.
  const run::RunResult again = run::TrainingRun(spec).run();
  EXPECT_EQ(again.history.back().train_loss, r.history.back().train_loss);
}

#endif  // MAGMADNN_HAVE_IMAGES
