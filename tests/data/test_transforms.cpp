#include <gtest/gtest.h>

#include <map>
#include <set>

#include "magmadnn/core/errors.h"
#include "magmadnn/data/transforms.h"
#include "temp_dir.h"

using namespace magmadnn;

TEST(Transforms, NormalizePerChannel) {
  // {N=2, C=2, 2, 2}: channel 0 holds 0..7-ish, channel 1 is 10x larger.
  std::vector<float> v;
  for (int i = 0; i < 2; ++i)
    for (int c = 0; c < 2; ++c)
      for (int k = 0; k < 4; ++k) v.push_back(float((i * 4 + k) * (c ? 10 : 1)));
  Tensor<float> x = Tensor<float>::from_vector({2, 2, 2, 2}, v, HOST);
  const auto [mean, sd] = data::channel_mean_std(x);
  EXPECT_DOUBLE_EQ(mean[0], 3.5);
  EXPECT_DOUBLE_EQ(mean[1], 35.0);
  EXPECT_NEAR(sd[1], 10 * sd[0], 1e-9);
  data::normalize(x, mean, sd);
  const auto [m2, s2] = data::channel_mean_std(x);
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(m2[c], 0.0, 1e-6);
    EXPECT_NEAR(s2[c], 1.0, 1e-6);
  }
  EXPECT_NEAR(x.get({1, 1, 1, 1}), (70.0 - 35.0) / sd[1], 1e-5);
  Tensor<double> one = Tensor<double>::from_vector({1, 1, 2}, {2, 4}, MANAGED);
  data::normalize(one, {1.0}, {2.0});  // one value for every channel
  EXPECT_EQ(one.to_vector(), (std::vector<double>{0.5, 1.5}));
  EXPECT_THROW_WITH(data::normalize(x, {0, 0, 0}, {1}), ShapeError, "2 channels", "3 means");
  EXPECT_THROW_WITH(data::normalize(x, {0}, {0}), ValueError, "standard deviation 0 is 0");
}

TEST(Transforms, OneHot) {
  const Tensor<float> idx = Tensor<float>::from_vector({4}, {3, 0, 1, 3}, HOST);
  const Tensor<float> y = data::one_hot(idx, 4);
  EXPECT_EQ(y.shape(), Shape({4, 4}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1}));
  const Tensor<double> y2 = data::one_hot<double>(std::vector<std::int64_t>{1, 0}, 2, MANAGED);
  EXPECT_EQ(y2.to_vector(), (std::vector<double>{0, 1, 1, 0}));
  EXPECT_THROW_WITH(data::one_hot(idx, 3), ValueError, "label 3 at position 0", "[0, 3)");
  EXPECT_THROW_WITH(data::one_hot(Tensor<float>::from_vector({2}, {0.5f, 1}, HOST), 3), ValueError, "0.5");
  EXPECT_THROW(data::one_hot(Tensor<float>({2, 2}, HOST), 3), ShapeError);
}

TEST(Transforms, HorizontalFlipProbability) {
  const data::HorizontalFlip<float> always(1.0), never(0.0), half(0.5);
  std::vector<float> img = {1, 2, 3, 4, 5, 6};  // {C=1, H=2, W=3}
  data::SampleRng rng(1, 2);
  always.apply(img.data(), {1, 2, 3}, rng);
  EXPECT_EQ(img, (std::vector<float>{3, 2, 1, 6, 5, 4}));
  never.apply(img.data(), {1, 2, 3}, rng);
  EXPECT_EQ(img, (std::vector<float>{3, 2, 1, 6, 5, 4}));
  int flipped = 0;
  const int trials = 20000;
  for (int i = 0; i < trials; ++i) {
    std::vector<float> s = {1, 2};
    data::SampleRng r(7, std::uint64_t(i));
    half.apply(s.data(), {1, 1, 2}, r);
    flipped += s[0] == 2.0f;
  }
  EXPECT_NEAR(double(flipped) / trials, 0.5, 0.015);  // ~4.2 sigma
  EXPECT_THROW(data::HorizontalFlip<float>(1.5), ValueError);
}

TEST(Transforms, RandomCropWithPaddingShiftsWithinPad) {
  const int c = 2, h = 5, w = 6, pad = 2;
  std::vector<float> src(c * h * w);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = float(i + 1);  // no zero in the source
  const data::RandomCropWithPadding<float> crop(pad);
  std::map<std::pair<int, int>, int> seen;
  for (int t = 0; t < 2000; ++t) {
    std::vector<float> x = src;
    data::SampleRng rng(11, std::uint64_t(t));
    crop.apply(x.data(), {c, h, w}, rng);
    ASSERT_EQ(x.size(), src.size());
    // Find the shift that explains the output: out[i][j] = src[i+dy][j+dx] or 0 outside.
    int found = 0;
    for (int dy = -pad; dy <= pad; ++dy)
      for (int dx = -pad; dx <= pad; ++dx) {
        bool ok = true;
        for (int ch = 0; ch < c && ok; ++ch)
          for (int i = 0; i < h && ok; ++i)
            for (int j = 0; j < w && ok; ++j) {
              const int si = i + dy, sj = j + dx;
              const float want = (si >= 0 && si < h && sj >= 0 && sj < w) ? src[(ch * h + si) * w + sj] : 0.0f;
              ok = x[(ch * h + i) * w + j] == want;
            }
        if (ok) {
          ++found;
          ++seen[{dy, dx}];
        }
      }
    ASSERT_EQ(found, 1) << "trial " << t;
  }
  EXPECT_EQ(seen.size(), 25u);  // every offset of the padded image occurs
  for (const auto& [k, n] : seen) EXPECT_GT(n, 40) << k.first << "," << k.second;  // expected 80 each
  // pad 0 is the identity; a {H, W} sample is accepted.
  std::vector<float> x = src;
  data::SampleRng rng(1, 1);
  data::RandomCropWithPadding<float>(0).apply(x.data(), {h, w * c}, rng);
  EXPECT_EQ(x, src);
  EXPECT_THROW(data::RandomCropWithPadding<float>(-1), ValueError);
  EXPECT_THROW(crop.apply(x.data(), {60}, rng), ShapeError);
}
