// confusion_matrix: counts by (true, predicted), per-class accuracy, and the
// errors for mismatched sizes and out-of-range classes.
#include <gtest/gtest.h>

#include <cmath>

#include "magmadnn/core/errors.h"
#include "magmadnn/model/metrics.h"

using namespace magmadnn;

TEST(ConfusionMatrix, CountsTruePerPredicted) {
  const std::vector<std::int64_t> truth = {0, 0, 1, 1, 1, 2, 2, 0};
  const std::vector<std::int64_t> pred = {0, 1, 1, 1, 0, 2, 1, 0};
  const model::ConfusionMatrix cm = model::confusion_matrix(truth, pred, 4);
  ASSERT_EQ(cm.classes, 4);
  ASSERT_EQ(cm.counts.size(), 16u);
  EXPECT_EQ(cm(0, 0), 2);
  EXPECT_EQ(cm(0, 1), 1);
  EXPECT_EQ(cm(1, 1), 2);
  EXPECT_EQ(cm(1, 0), 1);
  EXPECT_EQ(cm(2, 2), 1);
  EXPECT_EQ(cm(2, 1), 1);
  EXPECT_EQ(cm.counts[0 * 4 + 1], 1);  // row = true class, column = prediction
  EXPECT_EQ(cm.total(), 8);
  EXPECT_EQ(cm.class_total(1), 3);
  EXPECT_DOUBLE_EQ(cm.class_accuracy(0), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(cm.class_accuracy(2), 0.5);
  EXPECT_TRUE(std::isnan(cm.class_accuracy(3)));  // no sample of class 3
}

TEST(ConfusionMatrix, EmptyInputGivesZeroCounts) {
  const model::ConfusionMatrix cm = model::confusion_matrix({}, {}, 3);
  EXPECT_EQ(cm.counts, std::vector<std::int64_t>(9, 0));
  EXPECT_EQ(cm.total(), 0);
}

TEST(ConfusionMatrix, RejectsBadInput) {
  EXPECT_THROW(model::confusion_matrix({0, 1}, {0}, 2), ShapeError);
  EXPECT_THROW(model::confusion_matrix({0}, {0}, 0), ValueError);
  try {
    model::confusion_matrix({0, 5}, {0, 1}, 3);
    FAIL() << "a true label outside [0, classes) was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("true label 5 of sample 1"), std::string::npos) << e.what();
  }
  try {
    model::confusion_matrix({0, 1}, {-1, 1}, 3);
    FAIL() << "a negative prediction was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("prediction -1 of sample 0"), std::string::npos) << e.what();
  }
  const model::ConfusionMatrix cm = model::confusion_matrix({0}, {0}, 2);
  EXPECT_THROW(cm(2, 0), IndexError);
  EXPECT_THROW(cm.class_total(-1), IndexError);
}
