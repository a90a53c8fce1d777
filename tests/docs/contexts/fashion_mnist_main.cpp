// A block of statements that trains on Fashion-MNIST, run as the body of
// main(); exits 77 (CTest: skipped) when the data set is not installed.
#include <filesystem>
#include <iostream>

#include <magmadnn.h>
using namespace magmadnn;
// @head@

int main() {
  if (!std::filesystem::exists(std::string(data::kFashionMnistDir) + "/train-images-idx3-ubyte.gz") &&
      !std::filesystem::exists(std::string(data::kFashionMnistDir) + "/train-images-idx3-ubyte")) {
    std::cout << "skipped: no Fashion-MNIST in " << data::kFashionMnistDir << "\n";
    return 77;
  }
// @snippet@
  std::cout << "\ntraining accuracy " << m.accuracy << "\n";
  return m.accuracy > 0.7 ? 0 : 1;
}
