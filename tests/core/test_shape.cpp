#include <gtest/gtest.h>

#include "magmadnn/core/errors.h"
#include "magmadnn/core/shape.h"

using namespace magmadnn;

TEST(Shape, BasicsAndNegativeAxes) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.ndim(), 3);
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s[-1], 4);
  EXPECT_EQ(s[-3], 2);
  EXPECT_EQ(s.strides(), (std::vector<std::int64_t>{12, 4, 1}));
  EXPECT_EQ(s.to_string(), "{2, 3, 4}");
  EXPECT_EQ(Shape{}.numel(), 1);
}

TEST(Shape, ConvertsFromV1Vectors) {
  std::vector<unsigned int> v1{5, 6};
  Shape s = v1;
  EXPECT_EQ(s, (Shape{5, 6}));
  std::vector<unsigned int> back = s;
  EXPECT_EQ(back, v1);
  const std::uint32_t n = 7, r = 28;
  Shape t{n, r, r};
  EXPECT_EQ(t.numel(), 7 * 28 * 28);
}

TEST(Shape, ErrorsNameTheShape) {
  Shape s{2, 3};
  try {
    (void)s[2];
    FAIL() << "no exception";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("{2, 3}"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("axis 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Shape({2, -1}), ValueError);
}

TEST(Shape, Broadcast) {
  EXPECT_EQ(broadcast_shapes(Shape{4, 1, 3}, Shape{5, 1}), (Shape{4, 5, 3}));
  EXPECT_EQ(broadcast_shapes(Shape{}, Shape{2, 2}), (Shape{2, 2}));
  try {
    broadcast_shapes(Shape{2, 3}, Shape{4});
    FAIL();
  } catch (const ShapeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("{2, 3}"), std::string::npos);
    EXPECT_NE(m.find("{4}"), std::string::npos);
  }
}
