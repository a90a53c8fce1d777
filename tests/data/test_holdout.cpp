// holdout_split / take_rows: the validation set held out of the training set.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "magmadnn/core/errors.h"
#include "magmadnn/data/holdout.h"

using namespace magmadnn;

namespace {
void expect_partition(const data::Holdout& h, std::int64_t n) {
  std::vector<std::int64_t> all = h.train;
  all.insert(all.end(), h.validation.begin(), h.validation.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(static_cast<std::int64_t>(all.size()), n);
  for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(all[i], i);  // each index once: disjoint and complete
  EXPECT_TRUE(std::is_sorted(h.train.begin(), h.train.end()));
  EXPECT_TRUE(std::is_sorted(h.validation.begin(), h.validation.end()));
}
}  // namespace

TEST(Holdout, DisjointCompleteAndOfTheAskedSize) {
  const auto h = data::holdout_split(1000, 0.1, 42);
  expect_partition(h, 1000);
  EXPECT_EQ(h.validation.size(), 100u);
  // Not simply the last rows of the file: the held-out rows are spread out.
  EXPECT_LT(h.validation.front(), 500);
  EXPECT_GT(h.validation.back(), 500);
}

TEST(Holdout, SameSeedSameSplitOtherSeedOtherSplit) {
  const auto a = data::holdout_split(500, 0.2, 7), b = data::holdout_split(500, 0.2, 7);
  const auto c = data::holdout_split(500, 0.2, 8);
  EXPECT_EQ(a.validation, b.validation);
  EXPECT_NE(a.validation, c.validation);
}

TEST(Holdout, StratifiedByClass) {
  // 900 of class 0, 90 of class 1, 10 of class 2.
  std::vector<std::int64_t> labels(1000, 0);
  for (int i = 900; i < 990; ++i) labels[i] = 1;
  for (int i = 990; i < 1000; ++i) labels[i] = 2;
  const auto h = data::holdout_split(1000, 0.1, 3, &labels);
  expect_partition(h, 1000);
  std::map<std::int64_t, int> per_class;
  for (auto i : h.validation) ++per_class[labels[i]];
  EXPECT_EQ(per_class[0], 90);
  EXPECT_EQ(per_class[1], 9);
  EXPECT_EQ(per_class[2], 1);
}

TEST(Holdout, ZeroFractionKeepsEverythingAndTinySetsKeepBothSidesNonEmpty) {
  const auto none = data::holdout_split(5, 0.0, 1);
  EXPECT_TRUE(none.validation.empty());
  expect_partition(none, 5);
  const auto one = data::holdout_split(3, 0.01, 1);  // rounds to 0: one is held out anyway
  EXPECT_EQ(one.validation.size(), 1u);
  const auto most = data::holdout_split(2, 0.9, 1);  // rounds to 2: one is left to train on
  EXPECT_EQ(most.validation.size(), 1u);
  EXPECT_EQ(most.train.size(), 1u);
}

TEST(Holdout, BadArgumentsAreNamed) {
  EXPECT_THROW(data::holdout_split(10, 1.0, 1), ValueError);
  EXPECT_THROW(data::holdout_split(10, -0.1, 1), ValueError);
  EXPECT_THROW(data::holdout_split(1, 0.1, 1), ValueError);
  std::vector<std::int64_t> labels(3, 0);
  EXPECT_THROW(data::holdout_split(4, 0.5, 1, &labels), ValueError);
  try {
    data::holdout_split(10, 1.5, 1);
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("[0, 1)"), std::string::npos) << e.what();
  }
}

TEST(Holdout, TakeRowsCopiesTheRowsInOrder) {
  std::vector<float> v(12);
  std::iota(v.begin(), v.end(), 0.0f);
  const auto x = Tensor<float>::from_vector({4, 3}, v);
  const auto t = data::take_rows(x, {3, 1});
  ASSERT_EQ(t.shape(), Shape({2, 3}));
  EXPECT_EQ(t.to_vector(), (std::vector<float>{9, 10, 11, 3, 4, 5}));
  EXPECT_THROW(data::take_rows(x, {4}), IndexError);
}
