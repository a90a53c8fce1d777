// load_inputs: CSV input through io::read_csv, with a header only when the
// first line holds no number at all.
#include <gtest/gtest.h>

#include <fstream>

#include <unistd.h>

#include "magmadnn/core/errors.h"
#include "magmadnn/run/dataset.h"

using namespace magmadnn;

namespace {
std::string write(const std::string& name, const std::string& text) {
  const std::string p = ::testing::TempDir() + "/magmadnn_ds_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(p) << text;
  return p;
}
}  // namespace

TEST(LoadInputs, CsvWithAndWithoutHeader) {
  const auto plain = run::load_inputs(write("a.csv", "0,255\n51,102\n"), {1, 2});
  ASSERT_EQ(plain.shape(), Shape({2, 1, 2}));
  EXPECT_FLOAT_EQ(plain.get({0, 0, 1}), 1.0f);
  EXPECT_FLOAT_EQ(plain.get({1, 0, 0}), 0.2f);
  const auto headed = run::load_inputs(write("b.csv", "p0,p1\n0,255\n"), {2});
  ASSERT_EQ(headed.shape(), Shape({1, 2}));
}

// One bad cell in the first row is reported, not taken for a header (which
// would shift every prediction's index by one).
TEST(LoadInputs, ABadCellInTheFirstRowIsAnErrorNotAHeader) {
  const std::string p = write("c.csv", "0,x\n1,2\n");
  try {
    run::load_inputs(p, {2});
    FAIL() << "no error";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("x"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run::load_inputs(write("d.csv", "1,2,3\n"), {2}), IOError);  // wrong width, named
}

// Pixel values outside what training saw are refused with their place, not
// fed to the network (a NaN used to predict class 0).
TEST(LoadInputs, ValuesThatAreNotPixelsAreRefusedWithTheirLineAndColumn) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1,nan\n", ":1: column 2: nan is not a pixel value in [0, 255]"},
      {"p0,p1\n\n1,2\n3,inf\n", ":4: column 2: inf is not a pixel value in [0, 255]"},
      {"-1,2\n", ":1: column 1: -1 is not a pixel value in [0, 255]"},
      {"1,2\n255,256\n", ":2: column 2: 256 is not a pixel value in [0, 255]"},
  };
  int k = 0;
  for (const auto& [text, want] : cases) {
    const std::string p = write("px" + std::to_string(k++) + ".csv", text);
    try {
      run::load_inputs(p, {2});
      ADD_FAILURE() << "no error for " << text;
    } catch (const IOError& e) {
      EXPECT_NE(std::string(e.what()).find(p + want), std::string::npos) << e.what();
    }
  }
}
