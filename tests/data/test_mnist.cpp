#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <sstream>

#include "magmadnn/core/errors.h"
#include "magmadnn/data/mnist.h"
#include "magmadnn/io/idx.h"
#include "temp_dir.h"

using namespace magmadnn;
using magmadnn::test::TempDir;

namespace {
// n images of 4x3 pixels: pixel k of image i is (i * 12 + k) % 256; labels i % 10.
void write_mnist(const TempDir& dir, const std::string& split, std::int64_t n_images, std::int64_t n_labels,
                 bool gz_images, bool gz_labels) {
  std::vector<double> px, lab;
  for (std::int64_t i = 0; i < n_images * 12; ++i) px.push_back(double(i % 256));
  for (std::int64_t i = 0; i < n_labels; ++i) lab.push_back(double(i % 10));
  io::write_idx(dir.file(split + "-images-idx3-ubyte" + (gz_images ? ".gz" : "")), io::IdxType::u8, {n_images, 4, 3},
                px, gz_images);
  io::write_idx(dir.file(split + "-labels-idx1-ubyte" + (gz_labels ? ".gz" : "")), io::IdxType::u8, {n_labels}, lab,
                gz_labels);
}
}  // namespace

TEST(Mnist, LoadsPlainAndGzipFilesWithEachPixelScale) {
  TempDir dir;
  write_mnist(dir, "train", 25, 25, false, true);
  write_mnist(dir, "t10k", 7, 7, true, false);
  const auto train = data::load_mnist<float>(dir.str(), data::Train);
  EXPECT_EQ(train.images.shape(), Shape({25, 1, 4, 3}));
  EXPECT_EQ(train.labels.shape(), Shape({25, 10}));
  EXPECT_EQ(train.images.get_memory_type(), HOST);
  EXPECT_FLOAT_EQ(train.images.get({2, 0, 1, 2}), float((2 * 12 + 5) % 256) / 255.0f);
  for (int i = 0; i < 25; ++i) {
    EXPECT_EQ(train.classes[i], i % 10);
    for (int c = 0; c < 10; ++c) ASSERT_EQ(train.labels.get({i, c}), c == i % 10 ? 1.0f : 0.0f);
  }
  const auto v1 = data::load_mnist<double>(dir.str(), data::Test, {data::PixelScale::V1, MANAGED});
  EXPECT_EQ(v1.images.shape()[0], 7);
  EXPECT_EQ(v1.images.get_memory_type(), MANAGED);
  EXPECT_DOUBLE_EQ(v1.images.get(13), 13.0 / 128.0 - 1.0);
  const auto raw = data::load_mnist<float>(dir.str(), data::Test, {data::PixelScale::Raw, HOST});
  EXPECT_EQ(raw.images.get(13), 13.0f);
}

TEST(Mnist, V1ClassApi) {
  TempDir dir;
  write_mnist(dir, "train", 12, 12, true, true);
  data::MNIST<float> train_set(dir.str(), data::Train);
  // v1 programs build shapes from these, so they are unsigned int.
  static_assert(std::is_same_v<decltype(train_set.nchanels()), unsigned int>);
  const Shape batch = std::vector<unsigned int>{32u, train_set.nchanels(), train_set.nrows(), train_set.ncols()};
  EXPECT_EQ(batch, Shape({32, 1, 4, 3}));
  EXPECT_EQ(train_set.nimages(), 12u);
  EXPECT_EQ(train_set.nlabels(), 12u);
  EXPECT_EQ(train_set.nclasses(), 10u);
  Tensor<float>& images = train_set.images();
  EXPECT_EQ(images.shape(), Shape({12, 1, 4, 3}));
  EXPECT_EQ(train_set.labels().get({11, 1}), 1.0f);
  std::ostringstream os;
  train_set.print_image(1, os);
  const std::string text = os.str();
  EXPECT_NE(text.find("Image[1] is class 1:"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1 + 4);
  EXPECT_THROW(train_set.print_image(12, os), IndexError);
}

TEST(Mnist, CountsThatDisagree) {
  TempDir dir;
  write_mnist(dir, "train", 5, 4, false, false);
  EXPECT_THROW_WITH(data::load_mnist<float>(dir.str(), data::Train), IOError,
                    dir.file("train-images-idx3-ubyte"), "5 images", dir.file("train-labels-idx1-ubyte"),
                    "4 labels");
}

TEST(Mnist, BadLabelsWrongRankAndMissingFiles) {
  TempDir dir;
  write_mnist(dir, "train", 3, 3, false, false);
  io::write_idx(dir.file("train-labels-idx1-ubyte"), io::IdxType::u8, {3}, {1, 10, 2});
  EXPECT_THROW_WITH(data::load_mnist<float>(dir.str(), data::Train), IOError, "label 10 of image 1", "offset 9");
  io::write_idx(dir.file("train-labels-idx1-ubyte"), io::IdxType::u8, {3, 1}, {1, 1, 2});
  EXPECT_THROW_WITH(data::load_mnist<float>(dir.str(), data::Train), IOError, "expected MNIST labels",
                    "{3, 1}");
  EXPECT_THROW_WITH(data::load_mnist<float>(dir.str(), data::Test), IOError,
                    dir.file("t10k-images-idx3-ubyte") + ".gz");
}

TEST(Mnist, RealFashionMnist) {
  namespace fs = std::filesystem;
  const std::string d = data::kFashionMnistDir;
  if (!fs::exists(d + "/train-images-idx3-ubyte.gz") && !fs::exists(d + "/train-images-idx3-ubyte"))
    GTEST_SKIP() << "Fashion-MNIST not installed in " << d << " (apt-get install dataset-fashion-mnist)";
  const auto t0 = std::chrono::steady_clock::now();
  const auto train = data::load_fashion_mnist<float>(data::Train);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ info ] Fashion-MNIST train set loaded in " << secs << " s\n";
  const auto test = data::load_fashion_mnist<float>(data::Test);
  EXPECT_EQ(train.images.shape(), Shape({60000, 1, 28, 28}));
  EXPECT_EQ(test.images.shape(), Shape({10000, 1, 28, 28}));
  EXPECT_EQ(train.labels.shape(), Shape({60000, 10}));
  std::vector<int> hist(10, 0), hist_test(10, 0);
  for (const auto c : train.classes) ++hist[c];
  for (const auto c : test.classes) ++hist_test[c];
  for (int c = 0; c < 10; ++c) {
    EXPECT_EQ(hist[c], 6000) << "class " << c;
    EXPECT_EQ(hist_test[c], 1000) << "class " << c;
  }
  // Pixels in [0, 1]; the training set's mean pixel is about 0.286.
  const float* p = train.images.host_data();
  double sum = 0;
  float lo = 1, hi = 0;
  for (std::int64_t i = 0; i < train.images.size(); ++i) {
    sum += p[i];
    lo = std::min(lo, p[i]);
    hi = std::max(hi, p[i]);
  }
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 1.0f);
  EXPECT_NEAR(sum / double(train.images.size()), 0.286, 0.002);
  // One-hot rows agree with the class indices.
  const float* y = train.labels.host_data();
  for (std::int64_t i = 0; i < 60000; i += 997) ASSERT_EQ(y[i * 10 + train.classes[i]], 1.0f);
  data::MNIST<float> v1(d, data::Test);
  EXPECT_EQ(v1.nimages(), 10000u);
  EXPECT_EQ(v1.nrows(), 28u);
}
