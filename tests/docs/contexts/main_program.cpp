// A block of statements, run as the body of main() (the library's umbrella
// header included, namespace magmadnn open).
#include <iostream>

#include <magmadnn.h>
using namespace magmadnn;
// @head@

int main() {
// @snippet@
  std::cout << "\n";
  return 0;
}
