#include <gtest/gtest.h>

#include "magmadnn/core/errors.h"

using namespace magmadnn;

TEST(Errors, CarryFileLineAndMessage) {
  try {
    MAGMADNN_THROW(ShapeError, "bad " << 3 << " things");
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("bad 3 things"), std::string::npos);
    EXPECT_NE(m.find("test_errors.cpp:"), std::string::npos);
  }
  EXPECT_NO_THROW(MAGMADNN_CHECK(1 + 1 == 2, ValueError, "never"));
  EXPECT_THROW(MAGMADNN_CHECK(false, DeviceError, "x"), DeviceError);
}
