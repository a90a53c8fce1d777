// A program outside the magmadnn tree, built against an installed prefix.
#include <magmadnn.h>

#include <iostream>

using namespace magmadnn;

int main() {
  Tensor<float> x({2, 3}, {CONSTANT, 2.0f}, HOST);
  x.set({-1, -1}, 5.0f);
  const float s = math::sum_all(x);
  if (s != 15.0f) {
    std::cerr << "wrong sum " << s << "\n";
    return 1;
  }
  std::cout << "consumer ok: sum " << s << "\n";
  return 0;
}
