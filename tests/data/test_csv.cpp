#include <gtest/gtest.h>

#include "magmadnn/core/errors.h"
#include "magmadnn/io/byte_reader.h"
#include "magmadnn/io/csv.h"
#include "temp_dir.h"

using namespace magmadnn;
using magmadnn::test::TempDir;

TEST(Csv, SlidesPreShapedTensor) {
  TempDir dir;
  const std::string path = dir.file("data.csv");
  test::write_text(path, "1,2,3,4\n5,6,7,8\n9,10,11,12\n");
  Tensor<float> data({3, 4}, HOST);
  io::read_csv_to_tensor(data, path);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(data.get(i), float(i + 1));
  Tensor<double> flat({12}, HOST);  // 1-D takes all values in order
  io::read_csv_to_tensor(flat, path);
  EXPECT_EQ(flat.get(11), 12.0);
  Tensor<float> images({3, 2, 2}, MANAGED);  // any rank: rows on axis 0
  io::read_csv_to_tensor(images, path);
  EXPECT_EQ(images.get({2, 1, 0}), 11.0f);
}

TEST(Csv, DelimiterHeaderSpacesCrlfBlankLinesAndGzip) {
  TempDir dir;
  const std::string text = "a; b; c\r\n 1.5 ; -2e3;+3\r\n\r\n4;5; 6.25 \r\n\n";
  for (const bool gz : {false, true}) {
    const std::string path = dir.file(gz ? "semi.csv.gz" : "semi.csv");
    io::ByteWriter w(path, gz);
    w.write(text.data(), text.size());
    w.close();
    io::CsvOptions o;
    o.delimiter = ';';
    o.header = true;
    const Tensor<double> t = io::read_csv<double>(path, o);
    ASSERT_EQ(t.shape(), Shape({2, 3}));
    EXPECT_EQ(t.to_vector(), (std::vector<double>{1.5, -2000, 3, 4, 5, 6.25}));
  }
}

TEST(Csv, LabelColumnIndexAndOneHot) {
  TempDir dir;
  const std::string path = dir.file("labelled.csv");
  test::write_text(path, "2,0.1,0.2\n0,0.3,0.4\n1,0.5,0.6\n2,0.7,0.8\n");
  io::CsvOptions o;
  o.label_column = 0;
  const auto one_hot = io::read_csv_labeled<float>(path, o);
  EXPECT_EQ(one_hot.x.shape(), Shape({4, 2}));
  EXPECT_EQ(one_hot.y.shape(), Shape({4, 3}));
  EXPECT_FLOAT_EQ(one_hot.x.get({2, 1}), 0.6f);
  EXPECT_EQ(one_hot.y.to_vector(), (std::vector<float>{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1}));
  o.labels = io::LabelEncoding::Index;
  const auto index = io::read_csv_labeled<double>(path, o);
  EXPECT_EQ(index.y.to_vector(), (std::vector<double>{2, 0, 1, 2}));
  // Pre-shaped overload: {N, K} one-hot, {N} indices; label column defaults to 0.
  Tensor<float> x({4, 2}, HOST), y({4, 5}, HOST), yi({4}, HOST);
  io::read_csv_to_tensor(x, y, path);
  EXPECT_FLOAT_EQ(x.get({3, 0}), 0.7f);
  EXPECT_EQ(y.get({0, 2}), 1.0f);
  EXPECT_EQ(y.get({0, 4}), 0.0f);
  io::read_csv_to_tensor(x, yi, path);
  EXPECT_EQ(yi.get(2), 1.0f);
  // Negative column counts from the end; data-only read drops the label.
  const std::string last = dir.file("last.csv");
  test::write_text(last, "0.1,0.2,1\n0.3,0.4,0\n");
  io::CsvOptions ol;
  ol.label_column = -1;
  ol.num_classes = 4;
  const auto l = io::read_csv_labeled<float>(last, ol);
  EXPECT_EQ(l.y.shape(), Shape({2, 4}));
  EXPECT_EQ(l.y.get({0, 1}), 1.0f);
  EXPECT_EQ(io::read_csv<float>(last, ol).shape(), Shape({2, 2}));
}

TEST(Csv, NonNumericCellNamesFileLineColumnAndCell) {
  TempDir dir;
  const std::string path = dir.file("bad.csv");
  test::write_text(path, "x,y\n1,2\n3,abc\n");
  io::CsvOptions o;
  o.header = true;
  Tensor<float> t({2, 2}, HOST);
  EXPECT_THROW_WITH(io::read_csv_to_tensor(t, path, o), IOError, path + ":3, column 2", "'abc'", "not a number");
  test::write_text(path, "1,2\n3,\n");
  EXPECT_THROW_WITH(io::read_csv<float>(path), IOError, path + ":2, column 2", "''");
  test::write_text(path, "1,2\n3,4x\n");
  EXPECT_THROW_WITH(io::read_csv<float>(path), IOError, path + ":2, column 2", "'4x'");
}

TEST(Csv, RaggedRowsAndBadLabels) {
  TempDir dir;
  const std::string path = dir.file("ragged.csv");
  test::write_text(path, "1,2,3\n4,5\n");
  EXPECT_THROW_WITH(io::read_csv<float>(path), IOError, path + ":2", "2 cells", "line 1 has 3");
  test::write_text(path, "1.5,2\n");
  io::CsvOptions o;
  o.label_column = 0;
  EXPECT_THROW_WITH(io::read_csv_labeled<float>(path, o), IOError, path + ":1, column 1", "'1.5'",
                    "not a non-negative integer");
  test::write_text(path, "7,2\n");
  Tensor<float> x({1, 1}, HOST), y({1, 3}, HOST);
  EXPECT_THROW_WITH(io::read_csv_to_tensor(x, y, path), IOError, path + ":1", "label 7", "[0, 3)");
  o.label_column = 5;
  EXPECT_THROW_WITH(io::read_csv_labeled<float>(path, o), ValueError, "label column 5");
}

TEST(Csv, ShapeMismatchLeavesTensorUntouched) {
  TempDir dir;
  const std::string path = dir.file("m.csv");
  test::write_text(path, "1,2\n3,4\n5,6\n");
  Tensor<float> small({2, 2}, {CONSTANT, -1.0f}, HOST);
  EXPECT_THROW_WITH(io::read_csv_to_tensor(small, path), ShapeError, path + ":3", "more rows", "{2, 2}");
  EXPECT_EQ(small.get(0), -1.0f);
  Tensor<float> big({4, 2}, HOST);
  EXPECT_THROW_WITH(io::read_csv_to_tensor(big, path), ShapeError, path, "3 rows", "{4, 2}");
  Tensor<float> wide({3, 3}, HOST);
  EXPECT_THROW_WITH(io::read_csv_to_tensor(wide, path), ShapeError, path + ":1", "2 data values", "needs 3");
  EXPECT_THROW_WITH(io::read_csv<float>(dir.file("missing.csv")), IOError, dir.file("missing.csv"));
}
